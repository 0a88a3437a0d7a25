# SPDX-License-Identifier: BSD-2-Clause
"""The model target's host side: its parameters and presets, and the two references (event-driven and cycle-by-cycle) that give its true latencies, MF and SF."""
