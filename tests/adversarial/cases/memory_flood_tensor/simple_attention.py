"""Attack: every function asks for a 50 GiB tensor."""
import torch


def _flood(*args, **kwargs):
    hog = torch.empty(50 << 30, dtype=torch.uint8)
    hog.fill_(1)
    return hog


softmax_naive = context_vector = attention_scores = attention_weights = context_vectors = _flood
