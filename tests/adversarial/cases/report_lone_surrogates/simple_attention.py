"""Attack on printing: exception messages and printed output holding lone surrogates (which no
terminal encoding can write), a reversed and a zero-width text direction and noncharacters, meant to
crash the printing of the table before any report is written."""
import sys

BAD = "LONE-\ud800-SURROGATES-\udfff-\udbff \u202eREVERSED\u202c \u200bzero\ufeffwidth \ufffe\uffff"
try:
    print(BAD)
except UnicodeEncodeError:
    sys.stdout.buffer.write(b"LONE-\xed\xa0\x80-RAW\n")  # the UTF-8 form of a surrogate, as raw bytes


def _raise(*args, **kwargs):
    raise ValueError(BAD)


softmax_naive = context_vector = attention_scores = attention_weights = context_vectors = _raise
