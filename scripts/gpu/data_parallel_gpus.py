#!/usr/bin/env python3
"""data_parallel_gpus.py: netc's data-parallel training on two (or more) NVIDIA GPUs through NCCL,
checked and timed. Two halves, because the GPU machine has only a runtime-only netc
(-DNETC_RUNTIME_ONLY=ON: train and bench, no compiler):

  here (with the compiler):  scripts/gpu/data_parallel_gpus.py compile DIR [--target sm_90]
      compiles with --data-parallel into DIR: mnist at batch B and 2B, alexnet at 64 and 128,
      vgg16 at 64 (fp32), and alexnet at 128 and vgg16 at 64 in tf32;
  on the GPU machine:        scripts/gpu/data_parallel_gpus.py run DIR [--netc PATH] [--gpus N]
      1. exactness: mnist (32 per rank) and alexnet (64 per rank) train 10 steps from one seed on
         N ranks, on one rank accumulating N batches (the same sums in the same order: every
         loss within --loss-tol) and on one rank at N times the batch (the first loss within
         --loss-tol; the later ones differ by float32 summation order, printed);
      2. resume: a checkpoint of 5 steps on N ranks resumes on one rank (accumulating N batches:
         the same trajectory within --loss-tol; at N times the batch: printed);
      3. failure: rank 1 killed (SIGKILL) mid-run under `--gpus N` must end the run within
         seconds, naming the rank, and leave the last checkpoint loadable; the same under
         torchrun's variables without netc's launcher must end rank 0 through the watchdog
         (NETC_COMM_TIMEOUT=15);
      4. scaling: alexnet (128 per GPU) and vgg16 (64 per GPU), fp32 and tf32, timed by
         `netc bench` on one GPU and on N (the all-reduce on the second stream, and with
         NETC_DP_OVERLAP=0 after backward on the main stream); examples/s on N GPUs against one
         (the bar: 1.8x on two) and the all-reduce's cost: serial (one stream) and exposed (two);
      5. PyTorch DistributedDataParallel on the same GPUs (torchrun, tf32, cudnn.benchmark) for
         the same models, when python3 has torch.
  Exit status 0 when every check passes; the scaling bar is reported, not enforced.

  `compile DIR --target host --only mnist` and `run DIR --device cpu` try the checks on CPU ranks under mpirun
  (--ranks N; no watchdog part, no PyTorch): a dry run of this script on any machine.

NCCL: `netc devices` must list it; when libnccl.so.2 is not on the loader's path, the script
looks for pip's nvidia-nccl wheel and sets NETC_NCCL_LIBRARY. NVLink multicast stays off
(NCCL_NVLS_ENABLE=0) unless the environment says otherwise.
"""
import argparse
import csv
import glob
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)


def bundle_name(model, batch, prec="fp32", accumulate=1):
	return f"{model}.b{batch}{'k%d' % accumulate if accumulate > 1 else ''}.{prec}.bundle"


def compile_bundles(a):
	os.makedirs(a.dir, exist_ok=True)
	plan = [("mnist", 32, 1, "fp32"), ("mnist", 32, 2, "fp32"), ("mnist", 64, 1, "fp32"), ("alexnet", 64, 1, "fp32"),
	        ("alexnet", 64, 2, "fp32"), ("alexnet", 128, 1, "fp32"), ("vgg16", 64, 1, "fp32"),
	        ("alexnet", 128, 1, "tf32"), ("vgg16", 64, 1, "tf32")]
	for model, batch, k, prec in plan:
		if a.only and model not in a.only.split(","):
			continue
		out = os.path.join(a.dir, bundle_name(model, batch, prec, k))
		subprocess.run([a.netc, "compile", os.path.join(ROOT, "models", model + ".net"), "--target", a.target,
		                "--batch", str(batch), "--accumulate", str(k), "--precision", prec, "--data-parallel",
		                "-o", out, "--quiet"], check=True)
		info = subprocess.run([a.netc, "info", out], check=True, capture_output=True, text=True).stdout
		print(out + ": " + next(l for l in info.splitlines() if l.startswith("data-parallel")))


class Run:
	"""The run half's state: where things are, what failed."""

	def __init__(self, a):
		self.a, self.failed = a, []
		self.env = dict(os.environ)
		self.env.setdefault("NCCL_NVLS_ENABLE", "0")
		self.gpu = a.device == "cuda"
		self.rank_var = "RANK" if self.gpu else "OMPI_COMM_WORLD_RANK"
		if not self.gpu:
			self.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

	def one_device(self):
		return ["--device", "cuda" if self.gpu else "cpu"]

	def ranks(self):
		return ["--gpus" if self.gpu else "--ranks", str(self.a.gpus)]

	def bundle(self, model, batch, prec="fp32", accumulate=1):
		return os.path.join(self.a.dir, bundle_name(model, batch, prec, accumulate))

	def netc(self, args, env=None, timeout=300, ok=True):
		r = subprocess.run([self.a.netc, *args], capture_output=True, text=True, timeout=timeout,
		                   env=dict(self.env, **(env or {})))
		if ok and r.returncode != 0:
			self.fail(f"netc {' '.join(args)}: status {r.returncode}\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
		return r

	def fail(self, what):
		print("FAIL: " + what, flush=True)
		self.failed.append(what)

	def find_nccl(self):
		r = self.netc(["devices"])
		print(r.stdout, end="")
		if re.search(r"^nccl \(cuda ranks\): .*\(version", r.stdout, re.M):
			return True
		for base in sys.path:
			for lib in glob.glob(os.path.join(base, "nvidia", "nccl", "lib", "libnccl.so.2")):
				self.env["NETC_NCCL_LIBRARY"] = lib
				r = self.netc(["devices"])
				print(f"NETC_NCCL_LIBRARY={lib}\n" + r.stdout, end="")
				return "(version" in r.stdout
		return False

	def losses(self, path):
		return [float(row["loss"]) for row in csv.DictReader(open(path))]

	def train(self, name, bundle, steps, launch, extra=()):
		"""Trains `steps` steps from seed 7, logging every step; the losses."""
		log = os.path.join(self.a.out, name + ".csv")
		r = self.netc(["train", bundle, "--steps", str(steps), "--seed", "7", "--log-every", "1", "--log", log,
		               *launch, *extra])
		open(os.path.join(self.a.out, name + ".log"), "w").write(r.stdout + r.stderr)
		return self.losses(log) if r.returncode == 0 and os.path.exists(log) else []

	def compare(self, what, ref, many, tol, steps=None):
		"""Loss by loss: fails when any of the first `steps` (default all) differs by more than tol
		relative; prints the largest difference of each step."""
		if not ref or len(ref) != len(many):
			self.fail(f"{what}: {len(ref)} losses against {len(many)}")
			return
		rel = [abs(x - y) / max(abs(x), 1e-12) for x, y in zip(ref, many)]
		print(f"{what}: {len(ref)} losses; relative differences " + " ".join(f"{d:.0e}" if d else "0" for d in rel),
		      flush=True)
		worst = max(rel[:steps])
		if worst > tol:
			self.fail(f"{what}: differ by {worst:.2e} > {tol:g} within {steps or len(rel)} steps\n"
			          f" reference: {ref}\n ranks:     {many}")

	def exactness(self):
		"""N ranks x B against one rank accumulating N batches of B (the same sums in the same order:
		equal to the last printed digit) and against one rank at N*B (one sum over N*B examples:
		the first loss equal, then the float32 summation order's difference, which mnist's Adadelta
		amplifies over the steps)."""
		n = self.a.gpus
		for model, per_rank in (("mnist", 32), ("alexnet", 64)):
			whole, acc = self.bundle(model, per_rank * n), self.bundle(model, per_rank, accumulate=n)
			if not os.path.exists(whole) or not os.path.exists(acc):
				print(f"{model}: {whole} or {acc} is missing: not checked")
				if self.gpu:
					self.fail(f"{whole} or {acc} is missing (the compile half makes those of 2 ranks)")
				continue
			many = self.train(f"{model}_ranks", self.bundle(model, per_rank), 10, self.ranks())
			accumulated = self.train(f"{model}_accumulate", acc, 10, self.one_device())
			one = self.train(f"{model}_one", whole, 10, self.one_device())
			self.compare(f"{model}: {n} ranks x {per_rank} against 1 rank accumulating {n} x {per_rank}",
			             accumulated, many, self.a.loss_tol)
			self.compare(f"{model}: {n} ranks x {per_rank} against 1 rank x {n * per_rank}", one, many, self.a.loss_tol,
			             steps=1)
			if model == "mnist":
				self.resume(accumulated, one, per_rank)

	def resume(self, accumulated, one, per_rank):
		"""5 steps on N ranks, then 5 more on one rank from their checkpoint: the trajectory goes on."""
		n, st = self.a.gpus, os.path.join(self.a.out, "half.st")
		self.train("mnist_half", self.bundle("mnist", per_rank), 5, self.ranks(), ["--save", st])
		rest = self.train("mnist_resumed_accumulate", self.bundle("mnist", per_rank, accumulate=n), 10,
		                  self.one_device(), ["--resume", st])
		self.compare(f"mnist: 5 steps on {n} ranks, 5 more on 1 rank accumulating {n} x {per_rank}",
		             accumulated[5:], rest, self.a.loss_tol)
		rest = self.train("mnist_resumed", self.bundle("mnist", per_rank * n), 10, self.one_device(), ["--resume", st])
		self.compare(f"mnist: 5 steps on {n} ranks, 5 more on 1 rank x {n * per_rank}", one[5:], rest, 1.0)

	def rank_pid(self, parent, rank):
		"""The pid of the child of `parent` whose environment gives it that rank."""
		for pid in os.listdir("/proc"):
			try:
				stat = open(f"/proc/{pid}/stat").read()
				environ = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
			except OSError:
				continue
			if int(stat.rsplit(")", 1)[1].split()[1]) == parent and f"{self.rank_var}={rank}".encode() in environ:
				return int(pid)
		return None

	def kill_rank1(self, name, cmd, env, grace):
		"""Starts cmd, waits for its checkpoint, kills rank 1, and returns (status, output, seconds to
		end after the kill)."""
		st = os.path.join(self.a.out, name + ".st")
		p = subprocess.Popen(cmd + ["--save", st, "--save-every", "20"], stdout=subprocess.PIPE,
		                     stderr=subprocess.STDOUT, text=True, env=dict(self.env, **env))
		t0, victim = time.time(), None
		while time.time() - t0 < 120 and p.poll() is None and (victim is None or not os.path.exists(st)):
			time.sleep(0.2)
			victim = victim or self.rank_pid(p.pid, 1)
		if victim is None or not os.path.exists(st):
			p.kill()
			out = p.communicate()[0]
			self.fail(f"{name}: rank 1 or the first checkpoint never appeared\n{out[-2000:]}")
			return None
		time.sleep(1)
		os.kill(victim, signal.SIGKILL)
		t_kill = time.time()
		try:
			out = p.communicate(timeout=grace)[0]
		except subprocess.TimeoutExpired:
			p.kill()
			out = p.communicate()[0]
			self.fail(f"{name}: still running {grace} s after rank 1 was killed\n{out[-2000:]}")
			return None
		took = time.time() - t_kill
		open(os.path.join(self.a.out, name + ".log"), "w").write(out)
		return (p.returncode, out, took) + self.one_more_step(st)

	def one_more_step(self, st):
		"""Resumes checkpoint st on one rank for one more step: (whether it resumed, the run)."""
		whole = self.bundle("mnist", 32 * self.a.gpus)
		r = self.netc(["train", whole, *self.one_device(), "--resume", st, "--steps", "1"], ok=False)
		at = re.search(r"saved at step ([0-9]+)", r.stdout + r.stderr)
		if at:
			r = self.netc(["train", whole, *self.one_device(), "--resume", st, "--steps",
			               str(int(at.group(1)) + 1)], ok=False)
		return r.returncode == 0 and "resumed: " in r.stdout + r.stderr, r

	def failure(self):
		n = self.a.gpus
		b = self.bundle("mnist", 32)
		got = self.kill_rank1("killed_launcher", [self.a.netc, "train", b, *self.ranks(), "--steps", "1000000"],
		                      {}, 60)
		if got:
			rc, out, took, loads, r = got
			lines = [l for l in out.splitlines() if "rank 1" in l]
			print(f"{' '.join(self.ranks())}, rank 1 killed: the run ended in {took:.1f} s with status {rc}: "
			      f"{lines[0] if lines else out.strip().splitlines()[-1:]}", flush=True)
			if rc == 0 or not any(re.search("killed by signal 9|exited on signal 9", l) for l in lines):
				self.fail(f"{n} ranks: the launcher did not name rank 1 killed\n{out[-2000:]}")
			if not loads:
				self.fail(f"--gpus {n}: the last checkpoint does not resume\n{r.stdout}{r.stderr}")
			else:
				print("  the last checkpoint resumes: " + next(l for l in (r.stdout + r.stderr).splitlines()
				                                                if "resumed: " in l), flush=True)
		if not self.gpu:
			return
		# without netc's launcher: rank 0 waits in NCCL until its watchdog ends it
		port = "29533"
		ranks = []
		for k in range(n):
			env = dict(self.env, WORLD_SIZE=str(n), RANK=str(k), LOCAL_RANK=str(k), MASTER_ADDR="127.0.0.1",
			           MASTER_PORT=port, NETC_COMM_TIMEOUT="15")
			ranks.append(subprocess.Popen([self.a.netc, "train", b, "--device", "cuda", "--steps", "1000000",
			                               "--save", os.path.join(self.a.out, "watchdog.st"), "--save-every", "20"],
			                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
		t0 = time.time()
		while time.time() - t0 < 120 and not os.path.exists(os.path.join(self.a.out, "watchdog.st")):
			time.sleep(0.2)
		time.sleep(1)
		for p in ranks[1:]:
			p.kill()
		t_kill = time.time()
		try:
			out = ranks[0].communicate(timeout=90)[0]
		except subprocess.TimeoutExpired:
			ranks[0].kill()
			out = ranks[0].communicate()[0]
			self.fail(f"torchrun variables: rank 0 still runs 90 s after rank 1 was killed\n{out[-2000:]}")
			return
		for p in ranks[1:]:
			p.communicate()
		open(os.path.join(self.a.out, "watchdog.log"), "w").write(out)
		said = [l for l in out.splitlines() if "waited" in l or "error" in l]
		print(f"torchrun variables, rank 1 killed: rank 0 ended in {time.time() - t_kill:.1f} s with status "
		      f"{ranks[0].returncode}: {said[0] if said else out.strip().splitlines()[-1:]}", flush=True)
		if ranks[0].returncode == 0 or not said:
			self.fail("torchrun variables: rank 0 did not end with an error\n" + out[-2000:])

	def bench(self, bundle, launch, env=None):
		r = self.netc(["bench", bundle, *launch], env=env, timeout=600)
		text = r.stdout + r.stderr
		get = lambda key: float(re.search(key + r": ([0-9.]+)", text).group(1)) if re.search(key + r": ([0-9.]+)", text) else None
		alone = re.search(r"a rank alone, all ranks timed at once: ([0-9.]+) ms/step", text)
		return {"ms": get("ms/step"), "ex": get("examples/s"), "alone": float(alone.group(1)) if alone else None,
		        "text": text}

	def scaling(self):
		n = self.a.gpus
		print(f"\nscaling on {n} GPUs (netc bench: median of 5 repeats of 20 steps)", flush=True)
		print("model        prec  batch/GPU  1 GPU ms  ex/s   | N GPUs ms  ex/s   speed-up | alone ms | "
		      "one stream ms  speed-up", flush=True)
		for model, batch, prec in (("alexnet", 128, "fp32"), ("vgg16", 64, "fp32"), ("alexnet", 128, "tf32"),
		                           ("vgg16", 64, "tf32")):
			b = self.bundle(model, batch, prec)
			one = self.bench(b, self.one_device())
			many = self.bench(b, self.ranks())
			serial = self.bench(b, self.ranks(), env={"NETC_DP_OVERLAP": "0"})
			for name, r in (("one", one), ("many", many), ("serial", serial)):
				open(os.path.join(self.a.out, f"bench_{model}_{prec}_{name}.txt"), "w").write(r["text"])
			if None in (one["ex"], many["ex"], serial["ex"]):
				self.fail(f"{model} {prec}: a bench printed no examples/s")
				continue
			print(f"{model:<12} {prec}  {batch:>9}  {one['ms']:8.2f} {one['ex']:6.0f} | {many['ms']:9.2f} "
			      f"{many['ex']:6.0f} {many['ex'] / one['ex']:7.2f}x | {many['alone']:8.2f} | {serial['ms']:13.2f} "
			      f"{serial['ex'] / one['ex']:8.2f}x", flush=True)
			print(f"  all-reduce after backward (one stream): +{serial['ms'] - many['alone']:.2f} ms/step; on the "
			      f"second stream, exposed: +{many['ms'] - many['alone']:.2f} ms/step", flush=True)

	def pytorch(self):
		if subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode != 0:
			print("python3 has no torch: PyTorch DDP not timed")
			return
		n = self.a.gpus
		script = os.path.join(ROOT, "scripts", "bench_pytorch.py")
		print(f"\nPyTorch DistributedDataParallel (tf32, cudnn.benchmark) on 1 and {n} GPUs:", flush=True)
		for model, batch in (("alexnet", 128), ("vgg16", 64)):
			args = [script, "--device", "cuda", "--model", model, "--batch", str(batch), "--precision", "tf32",
			        "--cudnn-benchmark", "--csv"]
			one = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=self.env, timeout=600)
			many = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
			                       f"--nproc_per_node={n}", *args], capture_output=True, text=True, env=self.env,
			                      timeout=600)
			rows = [r.stdout.strip().splitlines()[-1].split(",") if r.returncode == 0 else None for r in (one, many)]
			if None in rows:
				print(f"  {model}: failed\n{one.stderr[-1500:]}{many.stderr[-1500:]}")
				continue
			print(f"  {model:<8} batch/GPU {batch}: 1 GPU {rows[0][6]} ms {rows[0][9]} ex/s; {n} GPUs {rows[1][6]} ms "
			      f"{rows[1][9]} ex/s ({float(rows[1][9]) / float(rows[0][9]):.2f}x)", flush=True)

	def main(self):
		os.makedirs(self.a.out, exist_ok=True)
		if self.gpu and not self.find_nccl():
			self.fail("no NCCL: set NETC_NCCL_LIBRARY to libnccl.so.2")
			return 1
		parts = self.a.parts.split(",")
		if "exactness" in parts:
			self.exactness()
		if "failure" in parts:
			self.failure()
		if "scaling" in parts and (self.gpu or self.a.bench_cpu):
			self.scaling()
		if "pytorch" in parts and self.gpu:
			self.pytorch()
		print("\n" + ("every check passed" if not self.failed else f"{len(self.failed)} checks failed"))
		return 1 if self.failed else 0


def main():
	p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
	sub = p.add_subparsers(dest="cmd", required=True)
	c = sub.add_parser("compile", help="compile the bundles (needs netc's compiler)")
	c.add_argument("dir")
	c.add_argument("--target", default="sm_90")
	c.add_argument("--only", help="comma-separated models (default: all)")
	c.add_argument("--netc", default=os.path.join(ROOT, "build", "netc"))
	r = sub.add_parser("run", help="check and time on the GPUs")
	r.add_argument("dir")
	r.add_argument("--netc", default=os.path.join(ROOT, "build", "netc"))
	r.add_argument("--gpus", type=int, default=2)
	r.add_argument("--out", default=None, help="where logs go (default DIR/out)")
	r.add_argument("--loss-tol", type=float, default=1e-5,
	               help="relative; the losses are logged with 6 significant digits")
	r.add_argument("--parts", default="exactness,failure,scaling,pytorch",
	               help="which of exactness,failure,scaling,pytorch to run (default: all)")
	r.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cpu: a dry run on CPU ranks")
	r.add_argument("--bench-cpu", action="store_true", help="with --device cpu: time alexnet and vgg16 too")
	a = p.parse_args()
	if a.cmd == "compile":
		compile_bundles(a)
		return 0
	a.out = a.out or os.path.join(a.dir, "out")
	return Run(a).main()


if __name__ == "__main__":
	sys.exit(main())
