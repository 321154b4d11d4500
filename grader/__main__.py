import sys

from grader.judge import main

sys.exit(main())
