/* test_fe_layers_doc.c: every layer of the frontend's table, and every alias, has its row in the
 * layer table of docs/language.md (a layer nobody can find in the guide is a layer nobody uses). */
#include "frontend/layers.h"
#include "tests/unit/test_util.h"

/* The "## Layers" section of the guide, NUL-terminated; NULL when the file cannot be read. */
static char *layers_section(void)
{
	char path[4096];
	tu_source_path("docs/language.md", path, sizeof path);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	static char text[1 << 20];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	char *start = strstr(text, "\n## Layers\n");
	if (!start)
		return NULL;
	char *end = strstr(start + 1, "\n## ");
	if (end)
		*end = '\0';
	return start;
}

/* Whether name is a word of a backquoted span in the first cell of a table row: `relu exp`,
 * `softmax`, `log_softmax` and `dense`, `linear` all name their layers. */
static bool has_row(const char *section, const char *name)
{
	size_t len = strlen(name);
	for (const char *line = section; line; line = strchr(line + 1, '\n')) {
		const char *row = line + (*line == '\n');
		if (strncmp(row, "| `", 3))
			continue;
		const char *cell_end = strstr(row + 1, " |");
		for (const char *p = row + 2; p && p < cell_end; p++) {
			bool starts = p[-1] == '`' || p[-1] == ' ';
			bool ends = p[len] == '`' || p[len] == ' ' || p[len] == ',';
			if (starts && !strncmp(p, name, len) && ends)
				return true;
		}
	}
	return false;
}

int main(void)
{
	tu_start("test_fe_layers_doc");
	const char *section = layers_section();
	CHECK(section, "docs/language.md has no \"## Layers\" section (NETC_SOURCE_DIR=%s)", getenv("NETC_SOURCE_DIR"));
	if (section) {
		for (int i = 0; i < layer_count(); i++)
			CHECK(has_row(section, layer_at(i)->sig.name), "layer %s has no row in docs/language.md's layer table",
			      layer_at(i)->sig.name);
		for (int i = 0; i < layer_alias_count(); i++) {
			const Layer *l;
			const char *alias = layer_alias(i, &l);
			CHECK(has_row(section, alias), "alias %s (of %s) has no row in docs/language.md", alias, l->sig.name);
		}
		CHECK(!has_row(section, "no_such_layer"), "the row matcher finds a layer that is not there");
	}
	return tu_finish("test_fe_layers_doc");
}
