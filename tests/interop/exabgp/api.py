#!/usr/bin/env python3
"""ExaBGP API process for the Tessera interop harness.

ExaBGP reads commands from this process's stdout and writes what it
receives (JSON) to its stdin. The harness appends commands to
DIR/commands (one per line); this script forwards new lines, and copies
every JSON line received to DIR/received.jsonl.
Usage: api.py DIR
"""
import os
import sys
import threading
import time

d = sys.argv[1]
cmds = os.path.join(d, "commands")
recv = os.path.join(d, "received.jsonl")


def pump_in():
    with open(recv, "a", buffering=1) as out:
        for line in sys.stdin:
            out.write(line)


threading.Thread(target=pump_in, daemon=True).start()
open(cmds, "a").close()
pos = 0
while True:
    with open(cmds) as f:
        f.seek(pos)
        data = f.read()
        # Only whole lines: the harness may be mid-write.
        cut = data.rfind("\n") + 1
        pos += cut
    for line in data[:cut].splitlines():
        if line.strip():
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
    time.sleep(0.05)
