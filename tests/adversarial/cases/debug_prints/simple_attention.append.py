# Not an attack: a correct submission that prints its (hidden) inputs and results while debugging.
_original_context_vectors = context_vectors


def context_vectors(inputs):
    result = _original_context_vectors(inputs)
    print("DEBUG-@@TOKEN@@", inputs.sum().item(), result.sum().item(), flush=True)
    return result
