"""Stand-ins for another part's classes, as the child holds them: data and a door, no reference code.

Where a check of one part needs another part that is not right on its own (suites/dependencies.py),
the child's `causal`, `mha`, ... become modules of StandIn classes. A StandIn has the parameters,
buffers, submodules and plain attributes of the grader's own class (the reference solutions, run in
the grader's process, stand_ins.py) and nothing of its code: building one, running its
forward and its backward are questions sent to the grader as data (the constructor's numbers and
the generator's state; the module's tensors and the inputs; the upstream gradient), whose answers
come back as data. Student code here can read, walk or replace all of this module and finds only
this generic machinery: the grader's source and code objects never enter the process.

The questions travel on the child's own channel, inside the request being answered: the child
writes {"stand_in": ...} where its reply would go, and the grader writes the answer as the next
request ({"op": "stand_in_answer"}) before it reads the reply.
"""
import builtins
import inspect
import types

import torch

from autograder.inside import counting, protocol

CHANNEL: dict[str, int] = {}  # {"requests": fd, "replies": fd}: set by child.serve
PLAIN = (bool, int, float, str, type(None))


def ask(question, tensors=()):
    """One question to the grader -> (answer dict, its tensors); the grader's refusal is raised here.
    Under an operation count (inside/counting.py) the question counts as the operations the grader's run
    of it issued, and the child's own side of it (writing and reading the tensors) as none."""
    with counting.uncounted():
        structure, buffers = protocol.encode({"question": question, "tensors": list(tensors)})
        protocol.send(CHANNEL["replies"], {"stand_in": structure}, buffers)
        header, payload = protocol.receive(CHANNEL["requests"])
        if header.get("op") != "stand_in_answer":
            raise RuntimeError("the grader did not answer the stand-in's question")
        if "error" in header:
            raise _error(header["error"])
        answer = protocol.decode(header["input"], payload)
    counting.add(answer.pop("counts", None))
    return answer, answer.pop("tensors", [])


def _error(error):
    kind = error.get("type") if isinstance(error, dict) else None
    cls = getattr(builtins, kind, None) if isinstance(kind, str) else None
    cls = cls if isinstance(cls, type) and issubclass(cls, Exception) else RuntimeError
    return cls(str(error.get("message", "")) if isinstance(error, dict) else "")


def make_module(name, classes, functions=None):
    """The child's module `name`: one StandIn class per {class name: signature} of the grader's, and
    one stand-in function per {function name: signature} (causal.py's causal_mask, used by a
    student's mha.py, is the grader's too when causal is not right on its own)."""
    module = types.ModuleType(name)
    module.__file__ = f"<the grader's {name}.py>"
    for class_name, signature in classes.items():
        setattr(module, class_name, stand_in_class(name, class_name, signature))
    for function_name, signature in (functions or {}).items():
        setattr(module, function_name, stand_in_function(name, function_name, signature))
    return module


def stand_in_function(module, name, signature):
    """The grader's function module.name as a stand-in: a call is a question (its numbers as data, its
    tensors), answered by the reference solution in the grader's process; a device argument (a
    torch.device or a string) is where the answer is put here (the grader computes on its CPU), else
    the first tensor argument's device. Differentiable: a backward is a question too."""
    spec = _signature(signature)

    def function(*args, **kwargs):
        bound = spec.bind(*args, **kwargs)  # a TypeError, as the real function gives
        bound.apply_defaults()
        arguments: list = []
        tensors: list[torch.Tensor] = []
        places: list[int] = []
        device = None
        for value in bound.arguments.values():
            if isinstance(value, torch.Tensor):
                places.append(len(arguments))
                tensors.append(value)
                arguments.append(None)
            elif isinstance(value, (torch.device, str)):
                device = torch.device(value)
                arguments.append(None)
            else:
                arguments.append(_number(value))
        if device is None:
            device = tensors[0].device if tensors else torch.device("cpu")
        question = {"where": [module, name], "arguments": arguments, "tensor_at": places}
        if any(_fake(t) for t in tensors):  # on the emulated GPU (emulated_gpu.py): no data, so only the answer's shape
            question["shapes"] = [[list(t.shape), str(t.dtype).replace("torch.", "")] for t in tensors]
            answer, _ = ask({"do": "call", **question})
            return torch.empty(answer["shape"], dtype=getattr(torch, answer["dtype"]), device=device)
        return _RemoteCall.apply(question, device, *tensors)

    function.__name__ = function.__qualname__ = name
    function.__module__ = module
    function.__signature__ = spec  # type: ignore[attr-defined]  # inspect.signature reads it
    return function


_CLASSES: dict = {}


def stand_in_class(module, name, signature=None):
    """The StandIn class for the grader's module.name (one per name, made once)."""
    key = (module, name)
    if key not in _CLASSES:
        _CLASSES[key] = type(name, (StandIn,), {"__module__": module, "_where": key,
                                                "__signature__": _signature(signature or [])})
    return _CLASSES[key]


def _signature(spec):
    parameters = []
    for entry in spec:
        name, kind = str(entry[0]), inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = entry[1] if len(entry) > 1 else inspect.Parameter.empty
        parameters.append(inspect.Parameter(name, kind, default=default))
    return inspect.Signature(parameters)


class StandIn(torch.nn.Module):
    """One of the grader's classes, as data in the child (see the module's docstring)."""

    _where = ("", "")
    __signature__: inspect.Signature  # the grader's class's, set on each class made here

    def __init__(self, *args, **kwargs):
        bound = type(self).__signature__.bind(*args, **kwargs)  # a TypeError, as the real class gives
        bound.apply_defaults()
        arguments = [_number(v) for v in bound.arguments.values()]
        super().__init__()
        self._arguments = arguments
        answer, tensors = ask({"do": "construct", "where": list(self._where), "arguments": arguments,
                               "dtype": str(torch.get_default_dtype()).replace("torch.", "")},
                              [torch.get_rng_state()])
        build(self, answer["tree"], iter(tensors[1:]))
        torch.set_rng_state(tensors[0])  # the generator where the grader's class left it

    def forward(self, *args):
        if not all(isinstance(a, torch.Tensor) for a in args):
            raise TypeError(f"{type(self).__name__}.forward takes tensors")
        held = self._state()
        names, state = [n for n, _ in held], [t for _, t in held]
        seed = int(torch.randint(0, 2**62, (1,))) if self.training else 0  # dropout: one draw, forward and backward
        question = {"where": list(self._where), "arguments": self._arguments, "names": list(names),
                    "training": [n for n, m in self.named_modules() if m.training], "seed": seed,
                    "inputs": len(args)}
        return _Remote.apply(question, *state, *args)

    def _state(self):
        return [(n, t) for n, t in self.named_parameters()] + [(n, t) for n, t in self.named_buffers()]


def build(module, tree, tensors):
    """Give `module` the grader's layout: attributes, parameters, buffers, submodules (in order)."""
    for key, value in tree.get("attributes", {}).items():
        if isinstance(value, PLAIN) and not str(key).startswith("_"):
            object.__setattr__(module, key, value)
    for name in tree.get("parameters", []):
        module.register_parameter(name, None if name in tree.get("absent", []) else
                                  torch.nn.Parameter(next(tensors), requires_grad=True))
    for name in tree.get("buffers", []):
        module.register_buffer(name, next(tensors), persistent=name not in tree.get("transient", []))
    for name, child in tree.get("children", []):
        module.add_module(name, _make_child(child, tensors))
    module.train(bool(tree.get("training", True)))
    return module


def _make_child(tree, tensors):
    if tree.get("stand_in"):
        where = tree["stand_in"]
        child = torch.nn.Module.__new__(stand_in_class(where[0], where[1]))
        torch.nn.Module.__init__(child)
        child._arguments = tree.get("arguments", [])
        return build(child, tree, tensors)
    cls = getattr(torch.nn, str(tree.get("class")), None)
    if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
        raise TypeError("not a torch.nn module")
    child = cls.__new__(cls)
    torch.nn.Module.__init__(child)
    return build(child, tree, tensors)


def _number(value):
    """A constructor's argument as plain data (a NumPy or 0-d tensor number becomes its value)."""
    if isinstance(value, PLAIN):
        return value
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    try:
        return int(value) if float(value).is_integer() and not isinstance(value, float) else float(value)
    except (TypeError, ValueError):
        raise TypeError("the grader's stand-in takes numbers, booleans or None as arguments") from None


class _Remote(torch.autograd.Function):
    """Forward and backward computed by the grader, on the module's tensors and the inputs."""

    @staticmethod
    def forward(ctx, question, *tensors):
        ctx.question = question
        ctx.save_for_backward(*tensors)
        answer, outputs = ask({"do": "forward", **question}, [t.detach().cpu() for t in tensors])
        device = tensors[-1].device if tensors else torch.device("cpu")
        return outputs[0].to(device)

    @staticmethod
    def backward(ctx, grad_output):
        return (None, *_grads(ctx, "backward", ctx.needs_input_grad[1:], grad_output))


def _grads(ctx, do, needed, grad_output):
    """The gradients of a remote forward's saved tensors, asked of the grader (question `do`), each on its
    tensor's device; None where autograd needs none (needed: ctx.needs_input_grad for the saved tensors)."""
    tensors = ctx.saved_tensors
    wanted = [bool(w) for w in needed]
    answer, grads = ask({"do": do, "wanted": wanted, **ctx.question},
                        [t.detach().cpu() for t in tensors] + [grad_output.detach().cpu()])
    given = iter(grads)
    return [next(given).to(t.device) if w else None for t, w in zip(tensors, wanted, strict=False)]  # wanted: maybe shorter


def _fake(tensor):
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(tensor, FakeTensor)


class _RemoteCall(torch.autograd.Function):
    """A stand-in function's call, and its backward, computed by the grader on the arguments' tensors."""

    @staticmethod
    def forward(ctx, question, device, *tensors):
        ctx.question = question
        ctx.save_for_backward(*tensors)
        answer, outputs = ask({"do": "call", **question}, [t.detach().cpu() for t in tensors])
        return outputs[0].to(device)

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, *_grads(ctx, "call_backward", ctx.needs_input_grad[2:], grad_output))
