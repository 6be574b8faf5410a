"""Evaluation: question sets, the experiment runner and benchmark reports.

The languages answers are checked in (SLDP, PDDL goals) are core and live in :mod:`scenerag.lang`.
"""
