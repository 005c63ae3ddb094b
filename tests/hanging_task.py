"""A calculator whose tool never returns: the planted hang for the tool-timeout and watchdog tests."""

from __future__ import annotations

import dataclasses
import time

from agentgrpo.tasks.calculator import TASK as CALCULATOR
from agentgrpo.tasks.calculator import CalculatorEnv


class HangingCalculatorEnv(CalculatorEnv):
    def calculate(self, expression: str) -> str:
        """Evaluate an arithmetic expression.

        Args:
            expression: The expression, e.g. "12 * 34 + 56".
        """
        time.sleep(3600)
        return "never"


TASK = dataclasses.replace(CALCULATOR, environment_factory=HangingCalculatorEnv)
