"""Time bounds in tests state behaviour, not speed.

A bound tells "the wait was interrupted" apart from "the wait ran its course": a 30 s sleep, a
read blocked forever, a hanging stream, a 30 s client timeout. It sits far above what even a
loaded machine needs and far below the alternative, so it cannot flake and still fails when
the interruption does not happen. How fast things really are is measured in bench/.
"""

INTERRUPTED_S = 5.0
