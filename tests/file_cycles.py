#!/usr/bin/env python3
"""file_cycles.py: fails when source files of netc's codegen/ or runtime/ call each other in a
circle.

usage: file_cycles.py LIBRARY.a...   (libnetc_codegen.a, libnetc_runtime.a)

Reads the object files of the libraries with nm, maps every undefined symbol of an object to the
object that defines it, and draws an edge from the source file that references the symbol to the
one that defines it. A cycle in that graph (a strongly connected component of more than one file)
is printed, one line per file with the symbols it takes from the next, and the exit status is 1.

The op registry tables are data, not calls: codegen/lower_table.c's arrays of lowerings and
emitters (and ir/registry.c, which is in no library read here) name every op's functions so that
the driver can find them by op. They are left out as the sources of edges; an edge into them
(the driver reading cg_lowerings) stays.
"""
import collections
import os
import shutil
import subprocess
import sys

# Source files whose references are the op registry's tables (see above), not calls.
TABLE_FILES = {"codegen/lower_table.c"}

# Cycles known and accepted, as frozensets of source files. Empty: netc has none.
ALLOWED_CYCLES = []


def find_nm():
	for name in ("llvm-nm-19", "llvm-nm", "nm"):
		path = shutil.which(name)
		if path:
			return path
	sys.exit("file_cycles.py: no nm found (llvm-nm-19 or nm)")


def read_objects(nm, library):
	"""{source file: (defined symbols, undefined symbols)} of one static library."""
	folder = os.path.basename(library)[len("libnetc_"):-len(".a")]
	out = subprocess.run([nm, library], check=True, capture_output=True, text=True).stdout
	objects, current = {}, None
	for line in out.splitlines():
		if line.endswith(".o:"):
			# CMake names an object <source>.c.o
			current = folder + "/" + line[:-1].removesuffix(".o")
			objects[current] = (set(), set())
			continue
		fields = line.split()
		if current is None or len(fields) < 2:
			continue
		kind, symbol = fields[-2], fields[-1]
		if kind == "U":
			objects[current][1].add(symbol)
		elif kind.isupper():
			objects[current][0].add(symbol)
	return objects


def build_graph(objects):
	"""{source: {target: [symbols]}}: source references symbols that target defines."""
	where = {}
	for src, (defined, _) in objects.items():
		for symbol in defined:
			where[symbol] = src
	graph = collections.defaultdict(lambda: collections.defaultdict(list))
	for src, (_, undefined) in objects.items():
		if src in TABLE_FILES:
			continue
		for symbol in sorted(undefined):
			dst = where.get(symbol)
			if dst and dst != src:
				graph[src][dst].append(symbol)
	return graph


def components(graph, nodes):
	"""The strongly connected components of more than one node (Tarjan)."""
	index, low, stack, on_stack, found = {}, {}, [], set(), []

	def visit(v):
		index[v] = low[v] = len(index)
		stack.append(v)
		on_stack.add(v)
		for w in sorted(graph.get(v, {})):
			if w not in index:
				visit(w)
				low[v] = min(low[v], low[w])
			elif w in on_stack:
				low[v] = min(low[v], index[w])
		if low[v] == index[v]:
			comp = []
			while True:
				w = stack.pop()
				on_stack.discard(w)
				comp.append(w)
				if w == v:
					break
			if len(comp) > 1:
				found.append(sorted(comp))

	sys.setrecursionlimit(10000)
	for v in sorted(nodes):
		if v not in index:
			visit(v)
	return found


def one_cycle(graph, comp):
	"""A shortest closed path through the component's first file, as a list of files."""
	members, start = set(comp), comp[0]
	prev, queue = {start: None}, collections.deque([start])
	while queue:
		v = queue.popleft()
		for w in sorted(graph[v]):
			if w not in members:
				continue
			if w == start:
				path = [v]
				while prev[path[-1]] is not None:
					path.append(prev[path[-1]])
				return list(reversed(path)) + [start]
			if w not in prev:
				prev[w] = v
				queue.append(w)
	return comp


def main():
	if len(sys.argv) < 2:
		sys.exit(__doc__)
	nm = find_nm()
	objects = {}
	for library in sys.argv[1:]:
		objects.update(read_objects(nm, library))
	graph = build_graph(objects)
	failed = False
	for comp in components(graph, objects):
		if frozenset(comp) in ALLOWED_CYCLES:
			continue
		failed = True
		cycle = one_cycle(graph, comp)
		print("cycle between source files: " + " -> ".join(cycle))
		for a, b in zip(cycle, cycle[1:]):
			print("  %s uses %s from %s" % (a, ", ".join(graph[a][b][:4]), b))
		if len(comp) > len(cycle) - 1:
			print("  (the circle's component: %s)" % ", ".join(comp))
	if not failed:
		print("no cycles among %d source files" % len(objects))
	return 1 if failed else 0


if __name__ == "__main__":
	sys.exit(main())
