"""Runs and their tool calls as OpenTelemetry spans: a span per run, a child span per call.

Only when ``opentelemetry-sdk`` is installed and a standard ``OTEL_*`` variable is set
(``OTEL_TRACES_EXPORTER``, ``OTEL_EXPORTER_OTLP_ENDPOINT``...); otherwise nothing of
OpenTelemetry is imported. Exporters: ``otlp`` (the default; needs
``opentelemetry-exporter-otlp``), ``console``, or ``none``.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Mapping
from typing import Any

__all__ = ["Telemetry", "telemetry_from_environment"]

log = logging.getLogger("toolscript.telemetry")


class Telemetry:
    """Spans for runs and calls on ``provider`` (an SDK TracerProvider)."""

    def __init__(self, provider: Any) -> None:
        from toolscript import __version__

        self.provider = provider
        self.tracer = provider.get_tracer("toolscript", __version__)

    def run_started(self, run: Any) -> Any:
        return self.tracer.start_span(
            "toolscript run",
            start_time=int(run.started * 1e9),
            attributes={
                "toolscript.run.id": run.id,
                "toolscript.run.origin": run.origin,
                "toolscript.run.script_hash": run.script_hash,
                "toolscript.run.resumed_from": run.resumed_from,
            },
        )

    def call(self, run: Any, record: Mapping[str, Any]) -> None:
        from opentelemetry import trace

        if run.span is None:
            return
        started = int(record["started"] * 1e9)
        span = self.tracer.start_span(
            f"tool {record['tool']}",
            context=trace.set_span_in_context(run.span),
            start_time=started,
            attributes={
                "toolscript.run.id": run.id,
                "toolscript.call.seq": record["seq"],
                "toolscript.call.tool": record["tool"],
                "toolscript.call.outcome": record["outcome"],
                "toolscript.call.arguments_bytes": record["arguments_bytes"],
                "toolscript.call.result_bytes": record["result_bytes"],
            },
        )
        if record["outcome"] not in ("ok", "replayed"):
            span.set_status(trace.Status(trace.StatusCode.ERROR, record["outcome"]))
        span.end(end_time=started + int(record["ms"] * 1e6))

    def run_ended(self, run: Any) -> None:
        from opentelemetry import trace

        if run.span is None:
            return
        run.span.set_attribute("toolscript.run.status", run.status)
        run.span.set_attribute("toolscript.run.calls", run.seq)
        if run.exit is not None:
            run.span.set_attribute("toolscript.run.exit", run.exit)
        if run.status not in ("ok", "running"):
            run.span.set_status(trace.Status(trace.StatusCode.ERROR, run.status))
        run.span.end()

    def shutdown(self) -> None:
        self.provider.shutdown()


def telemetry_from_environment(environ: Mapping[str, str] | None = None) -> Telemetry | None:
    """Telemetry configured by the standard ``OTEL_*`` variables, or None."""
    env = os.environ if environ is None else environ
    if not any(name.startswith("OTEL_") for name in env):
        return None
    if env.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return None
    if importlib.util.find_spec("opentelemetry") is None or (
        importlib.util.find_spec("opentelemetry.sdk") is None
    ):
        log.warning("OTEL_* is set but opentelemetry-sdk is not installed: no spans")
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": "toolscript"}))
    for name in env.get("OTEL_TRACES_EXPORTER", "otlp").split(","):
        exporter: Any = None
        name = name.strip()
        if name == "console":
            exporter = ConsoleSpanExporter()
        elif name == "otlp":
            exporter = _otlp_exporter(env)
        elif name != "none":
            log.warning("OTEL_TRACES_EXPORTER: unknown exporter %r, ignored", name)
        if exporter is not None:
            provider.add_span_processor(BatchSpanProcessor(exporter))
    return Telemetry(provider)


def _otlp_exporter(env: Mapping[str, str]) -> Any:
    protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
    )
    module = (
        "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
        if protocol == "grpc"
        else "opentelemetry.exporter.otlp.proto.http.trace_exporter"
    )
    try:
        exporter_module = importlib.import_module(module)
    except ImportError:
        log.warning(
            "OTLP export needs opentelemetry-exporter-otlp (pip install it); no spans exported"
        )
        return None
    return exporter_module.OTLPSpanExporter()
