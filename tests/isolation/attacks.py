"""What a hostile policy's module does on import, for ``test_containment``: written to a file.

It finds the ``fuzz`` parent by its command line, as an attacker would, then
tries to trace it, open its descriptors and memory, stop it, write outside
the temporary folder (where the checkout and its packages live), and starts a
child that leaves the session with a clean environment and forks on, to
rewrite the report after the run. Each attempt's outcome is a JSON line in
``ATTACK_LOG``; the policy itself is vLLM 0.33.0's, which breaks the replay
promise.
"""

ATTACKER = r'''
import ctypes, json, os, resource, signal, subprocess, sys
from junction.reference.policies.vllm import VllmPolicy

LOG = os.environ["ATTACK_LOG"]


def log(**fields):
    with open(LOG, "a") as out:
        out.write(json.dumps(fields) + "\n")


def parent():
    for name in os.listdir("/proc"):
        try:
            argv = open(f"/proc/{name}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"fuzz" in argv and b"--policy" in argv and b"-c" not in argv:
            return int(name)
    return None


def attempt(name, action):
    try:
        result = action()
    except OSError as error:
        log(attack=name, outcome=type(error).__name__)
        return
    log(attack=name, outcome="done" if result in (None, 0) else f"refused {result}")


target = parent()
log(attack="found", outcome=target)
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_SEIZE, PTRACE_DETACH = 0x4206, 17


def trace():
    if libc.ptrace(PTRACE_SEIZE, target, 0, 0) != 0:
        return ctypes.get_errno()
    libc.ptrace(PTRACE_DETACH, target, 0, 0)


def stop():
    os.kill(target, signal.SIGSTOP)
    os.kill(target, signal.SIGCONT)  # seen: undo at once, so a failing test ends


if target is not None:
    attempt("ptrace", trace)
    attempt("stdout", lambda: open(f"/proc/{target}/fd/1", "w").close())
    attempt("memory", lambda: open(f"/proc/{target}/mem", "rb").close())
    attempt("environ", lambda: open(f"/proc/{target}/environ", "rb").read() and None)
    attempt("stop", stop)
attempt("write", lambda: open(os.environ["ATTACK_OUTSIDE"], "w").close())
status = open("/proc/self/status").read()
fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
log(
    attack="limits",
    pid=os.getpid(),  # 1 where the policy is its own PID namespace's init
    no_new_privs=fields.get("NoNewPrivs", "").strip(),
    capabilities=fields.get("CapEff", "").strip(),
    open_files=resource.getrlimit(resource.RLIMIT_NOFILE)[0],
    address_space=resource.getrlimit(resource.RLIMIT_AS)[0],
    cpu=resource.getrlimit(resource.RLIMIT_CPU)[0],
)
ESCAPEE = """
import json, os, sys, time
report, ends = sys.argv[1], time.time() + 30
while time.time() < ends:
    if os.fork():
        os._exit(0)  # a new process each round: faster than any sweep by pid
    os.setsid() if os.getpid() != os.getsid(0) else None
    time.sleep(0.05)
    try:
        data = json.load(open(report))
    except (OSError, ValueError):
        continue
    data["passed"] = True
    json.dump(data, open(report, "w"))
"""
subprocess.Popen(
    [sys.executable, "-c", ESCAPEE, os.environ["ATTACK_REPORT"], "junction-escapee"],
    env={},
    start_new_session=True,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)


class Policy(VllmPolicy):
    pass
'''

PLANTED = r"""
import os
if "JUNCTION_CONTAINED" not in os.environ:  # in the checking parent: a false pass
    os._exit(0)
"""
