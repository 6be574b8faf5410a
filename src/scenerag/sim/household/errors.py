"""Errors of the symbolic household environment: each names the offending field or value and what to do.

Action failures inside an episode are *not* errors: they come back as a failed ``ActionResult`` so a
planner can read the reason. These exceptions are for misuse of the Python API (bad config, unknown task).
"""

from __future__ import annotations

from scenerag.errors import SceneRagError


class HouseholdError(SceneRagError):
    """Base class of errors raised by ``scenerag.sim.household``."""


class LayoutConfigError(HouseholdError):
    """A kitchen layout cannot be built from the given style, seed or distractor count."""


class UnknownTaskError(HouseholdError):
    """A task id that is not one of the 40 EmbodiedRAG-style kitchen tasks."""


class SolverError(HouseholdError):
    """The scripted oracle solver could not complete a task (an environment rule rejected its plan)."""
