# SPDX-License-Identifier: BSD-2-Clause
"""rtrig inside other tools: the pytest plugin and its budgets, the labgrid driver, cyclictest histograms and the exports."""
