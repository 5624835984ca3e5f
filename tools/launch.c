/* launch.c: `netc train|bench --devices LIST | --gpus N | --ranks N` starts one rank per device on
 * this machine, each the same command with `--device D` in place of the list.
 *
 * CPU ranks sum through MPI, so they are started by Open MPI's mpirun (exec'd in place of this
 * process). GPU ranks are started here, with torchrun's variables (WORLD_SIZE, RANK, LOCAL_RANK,
 * MASTER_ADDR 127.0.0.1, MASTER_PORT a free port) from which rank 0 hands NCCL's unique id to the
 * others over TCP. This process waits for them: it passes SIGINT and SIGTERM on, and when a rank
 * fails it ends the others and says which rank failed and how. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "tools/launch.h"

#define MAX_RANKS 64

static const char *command = "train"; /* argv[1], for messages */

/* One line on stderr: "netc COMMAND: ...". */
static __attribute__((format(printf, 1, 2))) void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "netc %s: ", command);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

typedef struct {
	char spec[MAX_RANKS][32];
	int n;
	bool cpu;
} DeviceList;

bool launch_wanted(const Args *a) { return a->devices || a->gpus || a->ranks; }

/* --devices LIST: names netc knows, all CPUs or all GPUs of one kind, each GPU once. */
static bool parse_devices(const char *list, DeviceList *d)
{
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		char err[256];
		if (d->n == MAX_RANKS || k == 0 || k >= sizeof d->spec[0]) {
			say("--devices takes 1 to %d comma-separated devices, got '%s'\n", MAX_RANKS,
				list);
			return false;
		}
		snprintf(d->spec[d->n], sizeof d->spec[0], "%.*s", (int)k, p);
		const char *s = d->spec[d->n];
		if (!rt_device_spec_valid(s, err, sizeof err)) {
			say("--devices: %s\n", err);
			return false;
		}
		bool cpu = strcmp(s, "cpu") == 0, gpu = strchr(s, ':') != NULL;
		if (!cpu && !gpu) {
			say("--devices names each device: cpu, cuda:N or hip:N, not '%s'\n", s);
			return false;
		}
		if (d->n && (cpu != d->cpu || (!cpu && strncmp(s, d->spec[0], 3) != 0))) {
			say("--devices mixes kinds of device ('%s' and '%s'): the ranks of a run share "
				"one engine\n", d->spec[0], s);
			return false;
		}
		for (int i = 0; !cpu && i < d->n; i++)
			if (strcmp(d->spec[i], s) == 0) {
				say("--devices names %s twice\n", s);
				return false;
			}
		d->cpu = cpu;
		d->n++;
		p += k + (p[k] == ',');
	}
	return d->n > 0;
}

/* The first N GPUs of the kind --device names (cuda or hip), else of the first kind that has N. */
static bool first_gpus(const Args *a, DeviceList *d)
{
	static const char *const kinds[] = {"cuda", "hip"};
	char why[256] = "", line[512] = "";
	for (int i = 0; i < 2; i++) {
		if (strcmp(a->device, "auto") != 0 && strncmp(a->device, kinds[i], strlen(kinds[i])) != 0)
			continue;
		int have = rt_device_count(kinds[i], why, sizeof why);
		if (have >= a->gpus) {
			for (d->n = 0; d->n < a->gpus; d->n++)
				snprintf(d->spec[d->n], sizeof d->spec[0], "%s:%d", kinds[i], d->n);
			return true;
		}
		size_t n = strlen(line);
		snprintf(line + n, sizeof line - n, "%s%s: %s", n ? "; " : "", kinds[i],
			 have < 0 || !why[0] ? (have >= 0 ? "too few GPUs" : why) : why);
		if (have > 0) {
			n = strlen(line);
			snprintf(line + n, sizeof line - n, " (%d GPU%s)", have, have == 1 ? "" : "s");
		}
	}
	say("--gpus %lld: this machine has fewer GPUs: %s\n", (long long)a->gpus, line);
	return false;
}

static bool device_list(const Args *a, DeviceList *d)
{
	memset(d, 0, sizeof *d);
	if ((a->devices != NULL) + (a->gpus > 0) + (a->ranks > 0) > 1) {
		say("--devices, --gpus and --ranks exclude each other\n");
		return false;
	}
	if (a->devices)
		return parse_devices(a->devices, d);
	if (a->gpus)
		return true; /* first_gpus, once the usage is known good */
	d->cpu = true;
	for (d->n = 0; d->n < a->ranks; d->n++)
		snprintf(d->spec[d->n], sizeof d->spec[0], "cpu");
	return true;
}

/* The GPUs of the list are there (one line naming the first that is not). */
static bool gpus_present(const DeviceList *d)
{
	char kind[8], why[256] = "";
	snprintf(kind, sizeof kind, "%.*s", (int)strcspn(d->spec[0], ":"), d->spec[0]);
	int have = rt_device_count(kind, why, sizeof why);
	for (int i = 0; i < d->n; i++)
		if (atoi(strchr(d->spec[i], ':') + 1) >= (have > 0 ? have : 0)) {
			say("--devices: %s: %s\n", d->spec[i],
				have <= 0 ? why : "there is no such GPU on this machine");
			return false;
		}
	return true;
}

static bool is_launch_option(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return strncmp(arg, name, n) == 0 && (arg[n] == 0 || arg[n] == '=');
}

/* argv less the launcher's options and --device, then "--device" dev (and --threads where the
 * ranks share the CPU): what each rank runs. */
static char **rank_argv(int argc, char **argv, const char *self, const char *dev, const char *threads)
{
	char **out = calloc((size_t)argc + 8, sizeof *out);
	if (!out)
		return NULL;
	int n = 0;
	out[n++] = (char *)self;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		bool drop = false;
		static const char *const ours[] = {"--devices", "--gpus", "--ranks", "--device"};
		for (int k = 0; k < 4 && !drop; k++)
			if (is_launch_option(arg, ours[k])) {
				drop = true;
				i += !strchr(arg, '=') && i + 1 < argc; /* its value */
			}
		if (!drop)
			out[n++] = argv[i];
	}
	out[n++] = "--device";
	out[n++] = (char *)dev;
	if (threads) {
		out[n++] = "--threads";
		out[n++] = (char *)threads;
	}
	return out;
}

/* Where this program is, for the ranks to run it. */
static bool self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return true;
}

/* CPU ranks: mpirun -np N netc ... --device cpu, in place of this process. Each rank gets an
 * equal share of the cores unless --threads says otherwise. */
static int exec_mpirun(int argc, char **argv, const Args *a, const DeviceList *d, const char *self)
{
	char np[24], threads[24];
	snprintf(np, sizeof np, "%d", d->n);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(threads, sizeof threads, "%ld", cores / d->n > 1 ? cores / d->n : 1);
	char **rank = rank_argv(argc, argv, self, "cpu", a->threads ? NULL : threads);
	char **cmd = calloc((size_t)argc + 16, sizeof *cmd);
	if (!rank || !cmd) {
		say("out of memory\n");
		return 1;
	}
	int n = 0;
	cmd[n++] = "mpirun";
	cmd[n++] = "-np";
	cmd[n++] = np;
	cmd[n++] = "--oversubscribe"; /* more ranks than cores is the user's call */
	cmd[n++] = "--bind-to";
	cmd[n++] = "none"; /* each rank runs a pool of threads */
	for (int i = 0; rank[i]; i++)
		cmd[n++] = rank[i];
	/* the ranks are this user's processes: Open MPI's refusal to run as root protects nothing
	 * here that running netc as root did not already give away */
	if (geteuid() == 0) {
		setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
		setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	}
	fflush(NULL);
	execvp("mpirun", cmd);
	say("%d CPU ranks are started by Open MPI's mpirun, which does not run: %s "
		"(apt-get install openmpi-bin)\n", d->n, strerror(errno));
	return 1;
}

/* A free TCP port on this machine for rank 0's rendezvous. */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 29500;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof sa;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static volatile sig_atomic_t forwarded;
static void on_signal(int sig) { forwarded = sig; }

/* Exit status of a rank as netc's: its own, or 128 + the signal that ended it. */
static int status_of(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

/* GPU ranks: one child per device with torchrun's variables; waits for all of them. */
static int spawn_gpu_ranks(int argc, char **argv, const DeviceList *d, const char *self)
{
	char port[16], size[16];
	snprintf(port, sizeof port, "%d", free_port());
	snprintf(size, sizeof size, "%d", d->n);
	pid_t pid[MAX_RANKS];
	struct sigaction sa = {.sa_handler = on_signal}, old[2];
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old[0]);
	sigaction(SIGTERM, &sa, &old[1]);
	fflush(NULL);
	int started = 0;
	for (; started < d->n; started++) {
		char **rank = rank_argv(argc, argv, self, d->spec[started], NULL);
		pid[started] = rank ? fork() : -1;
		if (pid[started] == 0) {
			char r[16];
			snprintf(r, sizeof r, "%d", started);
			setenv("WORLD_SIZE", size, 1);
			setenv("RANK", r, 1);
			setenv("LOCAL_RANK", r, 1);
			setenv("MASTER_ADDR", "127.0.0.1", 1);
			setenv("MASTER_PORT", port, 1);
			sigaction(SIGINT, &old[0], NULL);
			sigaction(SIGTERM, &old[1], NULL);
			execv(self, rank);
			say("rank %d: cannot run %s: %s\n", started, self, strerror(errno));
			_exit(127);
		}
		free(rank);
		if (pid[started] < 0) {
			say("cannot start rank %d: %s\n", started, strerror(errno));
			break;
		}
	}
	int live = started, rc = started == d->n ? 0 : 1, failed = started == d->n ? -1 : started;
	double ending = 0; /* when the others were told to end after a failure */
	bool stopping = false; /* a SIGINT or SIGTERM was passed on: ranks exit 130 or 143 */
	while (live > 0) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		if (p == 0 || (p < 0 && errno == EINTR)) {
			if (forwarded) {
				for (int i = 0; i < started; i++)
					if (pid[i] > 0)
						kill(pid[i], forwarded);
				forwarded = 0;
				stopping = true;
			}
			struct timespec t;
			clock_gettime(CLOCK_MONOTONIC, &t);
			double now = (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
			if (failed >= 0 && ending == 0)
				ending = now;
			if (failed >= 0 && now - ending > 10) /* a rank that does not end when told to */
				for (int i = 0; i < started; i++)
					if (pid[i] > 0)
						kill(pid[i], SIGKILL);
			struct timespec pause = {0, 50 * 1000 * 1000};
			nanosleep(&pause, NULL);
			continue;
		}
		if (p < 0)
			break;
		int r = 0;
		while (r < started && pid[r] != p)
			r++;
		if (r == started)
			continue;
		pid[r] = -1;
		live--;
		if (status_of(st) == 0 || failed >= 0)
			continue;
		if (stopping && (status_of(st) == 130 || status_of(st) == 143)) {
			rc = status_of(st); /* stopped as asked, after its step and checkpoint: the others too */
			continue;
		}
		failed = r;
		rc = status_of(st);
		if (WIFSIGNALED(st))
			say("rank %d (%s) was killed by signal %d (%s); ending the other ranks\n", r,
				d->spec[r], WTERMSIG(st), strsignal(WTERMSIG(st)));
		else if (rc != 130 && rc != 143)
			say("rank %d (%s) exited with status %d; ending the other ranks\n", r,
				d->spec[r], rc);
		for (int i = 0; i < started; i++)
			if (pid[i] > 0)
				kill(pid[i], SIGTERM);
	}
	sigaction(SIGINT, &old[0], NULL);
	sigaction(SIGTERM, &old[1], NULL);
	return rc;
}

int launch_ranks(int argc, char **argv, const Args *a)
{
	command = argv[1];
	DeviceList d;
	RtRanks env;
	char err[256], self[4096];
	if (!rt_ranks_from_env(&env, err, sizeof err) || env.launch != RT_LAUNCH_NONE) {
		say("--devices, --gpus and --ranks start the ranks themselves: not under mpirun "
			"or a launcher that set WORLD_SIZE\n");
		return 2;
	}
	if (!device_list(a, &d))
		return 2;
	if (a->gpus ? !first_gpus(a, &d) : !d.cpu && !gpus_present(&d))
		return 1;
	if (!self_path(self, sizeof self)) {
		say("cannot find this program (/proc/self/exe) to start the ranks\n");
		return 1;
	}
	return d.cpu ? exec_mpirun(argc, argv, a, &d, self) : spawn_gpu_ranks(argc, argv, &d, self);
}
