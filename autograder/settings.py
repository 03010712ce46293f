"""The grader's settings: typed, made once per run (by the command line, or by a test or plugin that
builds its own), and passed explicitly to the Engine, the Sandbox and the runner.

This is the one module that reads the grader's own variables from the environment. They are the
process boundary: a test or a deployment (the Gradescope bundle, a CI job) may set them for the
grader it starts, and a command line flag overrides them. Nothing else reads or writes them.

    CH03_DEVICE               where the student's modules run ("cpu" or "cuda"; --device)
    CH03_UNSAFE_NO_SANDBOX    "1": run student code even where it cannot be isolated (--unsafe-no-sandbox)
    CH03_CONTAINER            "1": container mode where the kernel refuses namespaces (--container)
    CH03_SEED                 the run's secret behind the unseen inputs (--seed)
    CH03_SANDBOX_UIDS         this run's first uid (drawn once per process otherwise)
    CH03_SANDBOX_DEBUG        "1": the fork server's stdout and stderr are not discarded
    CH03_ENVCHECK_CACHE       the folder of the environment check's verdicts
    CH03_BWRAP                the bubblewrap binary to use ("" for none)
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

DEVICE_ENV = "CH03_DEVICE"
UNSAFE_ENV = "CH03_UNSAFE_NO_SANDBOX"
CONTAINER_ENV = "CH03_CONTAINER"
SEED_ENV = "CH03_SEED"
UIDS_ENV = "CH03_SANDBOX_UIDS"
DEBUG_ENV = "CH03_SANDBOX_DEBUG"
CACHE_ENV = "CH03_ENVCHECK_CACHE"
BWRAP_ENV = "CH03_BWRAP"

_RUN_UIDS: list[int] = []  # this process's first uid, once drawn (a forked worker inherits it)


@dataclass(frozen=True)
class SandboxSettings:
    """How student code is run: the device, the fallbacks a deployment allows, the run's uids."""
    device: str = "cpu"           # "cpu" or "cuda": where the student's modules run
    unsafe: bool = False          # run without isolation where the room cannot be built (warned, recorded)
    container: bool = False       # container mode allowed where the kernel refuses namespaces to root
    first_uid: int = 0            # this run's first uid (0: drawn once per process, run_uids())
    debug: bool = False           # keep the fork server's stdout and stderr


@dataclass(frozen=True)
class Settings:
    """Everything a grading run is configured with besides the chapter and the rubric."""
    sandbox: SandboxSettings = SandboxSettings()
    seed: int | None = None       # the run's secret; None: drawn once by whoever grades first
    envcheck_cache: Path | None = None  # None: /var/cache/ch03-autograder as root, else ~/.cache/...

    def with_sandbox(self, **changes: object) -> Settings:
        return replace(self, sandbox=replace(self.sandbox, **changes))  # type: ignore[arg-type]

    def with_secret(self) -> Settings:
        """These settings with the run's secret drawn now when they have none (one per run: every
        worker of the run gets the same)."""
        from autograder.secret import draw_secret

        return self if self.seed is not None else replace(self, seed=draw_secret())


def from_environment(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings the environment gives (the defaults where it says nothing)."""
    env = os.environ if environ is None else environ
    seed = env.get(SEED_ENV, "")
    sandbox = SandboxSettings(device=env.get(DEVICE_ENV) or "cpu", unsafe=env.get(UNSAFE_ENV) == "1",
                              container=env.get(CONTAINER_ENV) == "1",
                              first_uid=int(env[UIDS_ENV]) if env.get(UIDS_ENV, "").isdigit() else 0,
                              debug=env.get(DEBUG_ENV) == "1")
    cache = env.get(CACHE_ENV)
    return Settings(sandbox=sandbox, seed=int(seed) if seed.isdigit() else None,
                    envcheck_cache=Path(cache) if cache else None)


def run_uids() -> int:
    """This process's first uid for the sandbox's children, when the settings name none: a random
    block of 10^7 above 10^6, drawn once (workers forked later share it)."""
    if not _RUN_UIDS:
        given = os.environ.get(UIDS_ENV, "")
        _RUN_UIDS.append(int(given) if given.isdigit() else
                         1_000_000 + int.from_bytes(os.urandom(4), "big") % 200 * 10_000_000)
    return _RUN_UIDS[0]


def bwrap_override() -> str | None:
    """The bubblewrap binary the environment names ('' for none), or None: look for one."""
    return os.environ.get(BWRAP_ENV)


def user_cache_home() -> str:
    """$XDG_CACHE_HOME, else ~/.cache."""
    return os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
