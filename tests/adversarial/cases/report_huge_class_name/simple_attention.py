"""Attack on the size of every report: classes whose __name__ is 3.9 MB, raised as exceptions and
returned as answers, so that the type name reaches every message of every check."""
HUGE = "Huge" * 975_000  # 3.9 MB

Boom = type(HUGE, (Exception,), {})
Answer = type(HUGE, (), {})


def softmax_naive(x):
    return Answer()  # "should return a tensor, but returned a <name> object"


def context_vector(inputs, query_index):
    raise Boom(HUGE)


def attention_scores(inputs):
    return Answer()


def attention_weights(scores):
    raise Boom(HUGE)


def context_vectors(inputs):
    raise Boom(HUGE)
