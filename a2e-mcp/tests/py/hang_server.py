"""An MCP 'server' that reads requests and never answers (not even initialize).

Writes its pid to the file named by the first argument, and starts a child
process (a sleeper) in its process group whose pid goes to the second file.
"""
import subprocess
import sys

with open(sys.argv[1], "w") as f:
    f.write(str(__import__("os").getpid()))
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[2], "w") as f:
    f.write(str(child.pid))
for _line in sys.stdin:
    pass
