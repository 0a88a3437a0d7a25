# SPDX-License-Identifier: BSD-2-Clause
"""The channels' one display order (:func:`rtrig.channels.channel_order`), which the
report, the comparison and the exports sort by."""

from rtrig.channels import channel_order


def test_isr_then_app_then_the_others_by_name():
    names = ["stim0+..marker0+", "app", "marker1+..marker1-", "isr"]
    assert sorted(names, key=channel_order) == [
        "isr", "app", "marker1+..marker1-", "stim0+..marker0+"]
