"""The OpenRPC document, generated from the params and result models of the method table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic.json_schema import models_json_schema

from agentcore.api.errors import ERROR_CODES
from agentcore.api.rpc import RpcMethod

_REF_TEMPLATE = "#/components/schemas/{model}"


def openrpc_document(methods: Mapping[str, RpcMethod], version: str) -> dict[str, Any]:
    models = {m.params for m in methods.values()} | {m.result for m in methods.values()}
    refs, top = models_json_schema(
        [(model, "validation") for model in sorted(models, key=lambda m: m.__name__)],
        ref_template=_REF_TEMPLATE,
    )
    schemas: dict[str, Any] = top.get("$defs", {})
    described = []
    for method in methods.values():
        params_schema = schemas.get(method.params.__name__, {})
        required = set(params_schema.get("required", []))
        described.append(
            {
                "name": method.name,
                "summary": method.summary,
                "paramStructure": "by-name",
                "params": [
                    {"name": name, "required": name in required, "schema": schema}
                    for name, schema in params_schema.get("properties", {}).items()
                ],
                "result": {
                    "name": "result",
                    "schema": refs[(method.result, "validation")],
                },
            }
        )
    errors = {
        code: {"code": number, "message": code, "data": {"code": code}}
        for code, number in ERROR_CODES.items()
    }
    return {
        "openrpc": "1.2.6",
        "info": {"title": "AgentCore Memory", "version": version},
        "methods": described,
        "components": {"schemas": schemas, "errors": errors},
    }
