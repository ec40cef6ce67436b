"""Segment texts several tests (and the record-fixture recorder) share."""

from __future__ import annotations

# Two English segments, the second naming what the first settled (the claims checks).
ALPHA = (
    "# Alpha\n\nThe Alpha Service stores records in Postgres. Postgres keeps a write-ahead log, "
    "and the Alpha Service reads replicas for every report it builds.\n\n"
    "The Alpha Service exports metrics to Prometheus. Prometheus scrapes every node each "
    "fifteen seconds and keeps the samples for thirty days.\n\n"
    "Grafana draws the dashboards that Prometheus feeds. Each dashboard shows latency, "
    "throughput and errors for one service.\n\n"
    "Alertmanager pages the Operations Team when Prometheus fires an alert. The Operations "
    "Team acknowledges the page in PagerDuty within five minutes.\n"
)
BETA = "# Beta\n\nThe Beta Gateway forwards requests to the Alpha Service.\n"

# A statute: chapter and article headings, and 同法 that only its heading path attests.
_PAD1 = "事業者は、個人情報を適正に取り扱う。" * 5
_PAD2 = "委員会は、事業者を監督する。" * 5
STATUTE = f"""個人情報の保護に関する法律

第一章　総則

（目的）
第一条　この法律は、事業者の遵守すべき義務等を定める。

{_PAD1}

（定義）
第二条　前条の義務は、同法の定めるところによる。

{_PAD2}
"""
