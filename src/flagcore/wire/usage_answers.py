"""A flag's usage history in Unleash's client-metrics shapes (issue 32):
``featureMetricsSchema`` (``GET /api/admin/client-metrics/features/<f>/raw``) and
``featureUsageSchema`` (``GET /api/admin/client-metrics/features/<f>``), whose items are
``featureEnvironmentMetricsSchema``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import attrs

from flagcore.wire.answer_table import AnswerField, answer

__all__ = ["FeatureEnvironmentMetricsAnswer", "FeatureMetricsAnswer", "FeatureUsageAnswer"]

_COUNT = {"minimum": 0}


@answer(
    AnswerField("feature_name", "featureName", omitted_when_none=True),
    AnswerField("app_name", "appName", omitted_when_none=True),
    AnswerField("environment", "environment"),
    AnswerField("timestamp", "timestamp"),
    AnswerField("yes", "yes", schema=_COUNT),
    AnswerField("no", "no", schema=_COUNT),
    AnswerField("variants", "variants", omitted_when_none=True),
)
@attrs.frozen
class FeatureEnvironmentMetricsAnswer:
    """Counts of one hour or day (``timestamp``, its start) in one environment, from one
    application (a series' point) or from all (the last hour's usage: no app, no variants)."""

    feature_name: str | None
    app_name: str | None
    environment: str
    timestamp: dt.datetime
    yes: int
    no: int
    variants: Mapping[str, int] | None


@answer(
    AnswerField("version", "version"),
    AnswerField("maturity", "maturity"),
    AnswerField("data", "data"),
)
@attrs.frozen
class FeatureMetricsAnswer:
    """Unleash's ``featureMetricsSchema``: version 1, maturity ``stable``."""

    version: int
    maturity: str
    data: tuple[FeatureEnvironmentMetricsAnswer, ...]


@answer(
    AnswerField("version", "version"),
    AnswerField("maturity", "maturity"),
    AnswerField("feature_name", "featureName"),
    AnswerField("last_hour_usage", "lastHourUsage"),
    AnswerField("seen_applications", "seenApplications"),
)
@attrs.frozen
class FeatureUsageAnswer:
    """Unleash's ``featureUsageSchema``."""

    version: int
    maturity: str
    feature_name: str
    last_hour_usage: tuple[FeatureEnvironmentMetricsAnswer, ...]
    seen_applications: tuple[str, ...]
