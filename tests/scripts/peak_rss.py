"""Runs a command and writes its peak resident set size (KiB, the kernel's
ru_maxrss of the child) to a file; exits as the command did.

Usage: peak_rss.py REPORT COMMAND [ARGS...]

The command is forked from this small process: a command forked by a
large one (a test binary running many tests at once) would report that
process's resident size at the fork when larger, since Linux keeps the old
image's high-water mark across exec. The floor here is this interpreter's
own size (about 10 MiB)."""
import os
import signal
import sys

report, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        print(f"peak_rss.py: cannot run {argv[0]}: {e}", file=sys.stderr)
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    f.write(f"{usage.ru_maxrss}\n")
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
sys.exit(os.WEXITSTATUS(status))
