import sys

from grader import main

sys.exit(main())
