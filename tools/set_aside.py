"""After `make run`: where a fresh start set the previous run's checkpoint aside, and its size, said on the
terminal (the notebook's own output does not reach it).

    python -m tools.set_aside checkpoints
"""

import os
import sys

from continuous_control.checkpoints import kept

if __name__ == "__main__":
    old = os.path.join(sys.argv[1], "resume.old")
    if os.path.exists(old):
        print(f"The checkpoint of the run before this one is kept in {kept(old)}.")
