"""Attack on the TA's terminal: every function raises (and the module prints) text full of ANSI and
other control sequences that clear the screen, move the cursor home and redraw the score table with
every part full and 100/100, set the window title, hide the real lines and overwrite them after a
carriage return."""
import sys

PARTS = ("simple_attention", "self_attention_v1", "self_attention_v2", "weight_transfer", "causal", "mha",
         "exercises", "numpy_attention")
REDRAW = ("\x1b[2J\x1b[3J\x1b[H\x1b]0;all graded\x07\x9b2J"
          + "".join(f"{part:<20}{'full / full':>12}\n" for part in PARTS)
          + "total                  100 / 100\n\x1b[8m\r\x1b[1A\x1b[2K")
print(REDRAW)
sys.stderr.write(REDRAW)


def _forge(*args, **kwargs):
    raise RuntimeError(REDRAW)


softmax_naive = context_vector = attention_scores = attention_weights = context_vectors = _forge
