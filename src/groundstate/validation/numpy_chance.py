"""numpy's chance pushed to one end of its range, for ``grader_determinism``
(:func:`groundstate.validation.skew.skewed`): ``np.random.random()``, the other functions of
its global stream, ``np.random.default_rng()`` unseeded, ``np.random.RandomState()`` and the
streams a suite's module keeps (``_RNG = np.random.default_rng()``).

numpy draws in C, from a bit generator's functions; :class:`_SkewedBits` is one whose
functions are Python's (through ``ctypes``), drawing from a skewed ``random`` stream. As with
the ``random`` module, only the draws a check takes a verdict from are skewed (uniforms,
integers, a choice, a shuffle): the others (``normal``...) loop until their draws vary, and
keep a real stream.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

DRAWS = {
    "random": "random",
    "random_sample": "random",
    "ranf": "random",
    "sample": "random",
    "uniform": "uniform",
    "randint": "integers",
    "integers": "integers",
    "choice": "choice",
    "shuffle": "shuffle",
    "permutation": "permutation",
}
"""The draws skewed, by name, with the ``Generator`` method drawing each (``randint``, a
global stream's, as ``integers``: the same arguments, drawn from the high bits)."""

_Next64 = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)
_Next32 = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_void_p)
_NextDouble = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p)


class _BitGen(ctypes.Structure):
    """numpy's ``bitgen_t``."""

    _fields_ = [
        ("state", ctypes.c_void_p),
        ("next_uint64", _Next64),
        ("next_uint32", _Next32),
        ("next_double", _NextDouble),
        ("next_raw", _Next64),
    ]


class _SkewedBits:
    """A bit generator drawing from *stream* (a skewed ``random.Random``): what
    ``np.random.Generator`` takes, its ``capsule`` and ``lock``."""

    def __init__(self, stream: Any) -> None:
        def bits(n: int) -> Callable[[object], int]:
            return lambda _: int.from_bytes(stream.randbytes(n // 8), "big")

        self._struct = _BitGen(
            None,
            _Next64(bits(64)),
            _Next32(bits(32)),
            _NextDouble(lambda _: stream.random()),
            _Next64(bits(64)),
        )
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        self._name = b"BitGenerator"  # held: the capsule keeps a pointer to it
        self.capsule = new(ctypes.addressof(self._struct), self._name, None)
        self.lock = threading.Lock()


def _drawing(name: str, target: str, real: Callable[..., Any]) -> Callable[..., Any]:
    """The method *name* of a skewed class: drawn by its skewed generator's *target* when it
    has one, else by the *real* class's."""

    def draw(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self._skew is None:
            return real(self, *args, **kwargs)
        return getattr(self._skew, target)(*args, **kwargs)

    draw.__name__ = name
    return draw


def _skewed_class(real: Any, skew: object) -> Any:
    """A subclass of numpy's *real* stream class whose instances made unseeded
    (``RandomState()``) draw the skewed draws from *skew*; seeded, as the real class."""

    def __init__(self: Any, seed: Any = None) -> None:
        real.__init__(self, seed)
        self._skew = skew if seed is None else None

    def rand(self: Any, *shape: int) -> Any:  # RandomState's: a shape as its arguments
        return real.rand(self, *shape) if self._skew is None else self._skew.random(shape or None)

    methods: dict[str, Any] = {
        n: _drawing(n, t, getattr(real, n)) for n, t in DRAWS.items() if hasattr(real, n)
    }
    methods |= {"__init__": __init__, "_skew": None, "__module__": real.__module__}
    if hasattr(real, "rand"):
        methods["rand"] = rand
    return type(real.__name__, (real,), methods)


class NumpyChance:
    """numpy's chance skewed to the end of *stream* (a skewed ``random.Random``), if numpy is
    imported: :attr:`pairs` ``(original, skewed)`` for the ``numpy`` and ``numpy.random``
    modules, ``default_rng``, ``RandomState`` and the functions of the global stream, and
    :meth:`like` for a stream a suite's module keeps."""

    def __init__(self, stream: Any) -> None:
        self.pairs: list[tuple[object, object]] = []
        np = self.np = sys.modules.get("numpy")
        if np is None or not hasattr(np, "random"):
            return
        npr = np.random
        self.skew = skew = npr.Generator(_SkewedBits(stream))
        self.generator, state_class = (
            _skewed_class(c, skew) for c in (npr.Generator, npr.RandomState)
        )

        real = npr.default_rng  # not as rebound process-wide while skewed

        def default_rng(seed: Any = None) -> Any:
            return real(seed) if seed is not None else self.like(real())

        state = state_class()
        drawn = {  # ranf and sample: the module's names for random_sample
            name: getattr(state, name if hasattr(state, name) else "random_sample")
            for name in [*DRAWS, "rand"]
            if hasattr(npr, name)
        }
        module = _module_copy(npr, RandomState=state_class, default_rng=default_rng, **drawn)
        self.pairs = [
            (npr.default_rng, default_rng),
            (npr.RandomState, state_class),
            *((getattr(npr, name), function) for name, function in drawn.items()),
            (npr, module),
            (np, _module_copy(np, random=module)),
        ]
        self.state_class = state_class

    def names(self) -> list[tuple[ModuleType, str]]:
        """``(numpy.random, name)`` for each name rebound process-wide: the global stream's
        draws and ``default_rng``, as a library the suite's code calls reaches them."""
        if self.np is None or not self.pairs:
            return []
        npr = self.np.random
        return [(npr, name) for name in [*DRAWS, "rand", "default_rng"] if hasattr(npr, name)]

    def like(self, value: object) -> object | None:
        """A skewed stream standing for numpy's stream *value* (a module's
        ``np.random.default_rng()`` or ``RandomState()``, seeded or not: its draws follow
        every earlier attempt's), or None for anything else."""
        if self.np is None or not self.pairs:
            return None
        npr = self.np.random
        made: object = None
        if isinstance(value, npr.Generator) and not isinstance(value, self.generator):
            made = self.generator(npr.PCG64())
            vars(made)["_skew"] = self.skew
        elif isinstance(value, npr.RandomState) and not isinstance(value, self.state_class):
            made = self.state_class()
        return made


def _module_copy(module: ModuleType, **changed: object) -> ModuleType:
    copy = ModuleType(module.__name__, module.__doc__)
    copy.__dict__.update(vars(module))
    copy.__dict__.update(changed)
    return copy
