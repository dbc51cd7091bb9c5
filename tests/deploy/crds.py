"""Structural schemas of the custom resources deploy/ ships, for validation without their CRDs.

The official schemas of these kinds come with their operators' CRDs (Prometheus Operator's
``monitoring.coreos.com/v1``, cert-manager's ``cert-manager.io/v1``), which are not installed
here. These name, at every level the manifests use, the fields those CRDs define (with their
types and enumerations) and refuse any other, so a misspelt or misplaced field fails as it
would on a cluster with pruning and strict field validation; deeper levels are left open.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCHEMAS"]

_STR: dict[str, Any] = {"type": "string"}
_OBJ: dict[str, Any] = {"type": "object"}
_ARR: dict[str, Any] = {"type": "array"}
_INT: dict[str, Any] = {"type": "integer"}
_BOOL: dict[str, Any] = {"type": "boolean"}
_DURATION: dict[str, Any] = {"type": "string", "pattern": r"^(0|(([0-9]+)(y|w|d|h|m|s|ms))+)$"}


def _closed(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _resource(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return _closed(
        {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": _closed(
                {
                    "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"},
                    "namespace": _STR,
                    "labels": {"type": "object", "additionalProperties": _STR},
                    "annotations": {"type": "object", "additionalProperties": _STR},
                },
                ("name", "namespace"),
            ),
            "spec": spec,
        },
        ("apiVersion", "kind", "metadata", "spec"),
    )


_SECRET_KEY = _closed({"name": _STR, "key": _STR, "optional": _BOOL}, ("key",))
_SAFE_TLS = _closed(
    {
        "ca": _closed({"configMap": _SECRET_KEY, "secret": _SECRET_KEY}),
        "cert": _closed({"configMap": _SECRET_KEY, "secret": _SECRET_KEY}),
        "keySecret": _SECRET_KEY,
        "caFile": _STR,
        "certFile": _STR,
        "keyFile": _STR,
        "serverName": _STR,
        "insecureSkipVerify": _BOOL,
        "minVersion": {"enum": ["TLS10", "TLS11", "TLS12", "TLS13"]},
        "maxVersion": {"enum": ["TLS10", "TLS11", "TLS12", "TLS13"]},
    }
)
_ENDPOINT = _closed(
    {
        "port": _STR,
        "targetPort": {"anyOf": [_STR, _INT]},
        "path": _STR,
        "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
        "params": _OBJ,
        "interval": _DURATION,
        "scrapeTimeout": _DURATION,
        "tlsConfig": _SAFE_TLS,
        "bearerTokenFile": _STR,
        "bearerTokenSecret": _SECRET_KEY,
        "authorization": _OBJ,
        "basicAuth": _OBJ,
        "oauth2": _OBJ,
        "honorLabels": _BOOL,
        "honorTimestamps": _BOOL,
        "trackTimestampsStaleness": _BOOL,
        "metricRelabelings": _ARR,
        "relabelings": _ARR,
        "proxyUrl": _STR,
        "noProxy": _STR,
        "proxyFromEnvironment": _BOOL,
        "proxyConnectHeader": _OBJ,
        "followRedirects": _BOOL,
        "enableHttp2": _BOOL,
        "filterRunning": _BOOL,
    }
)
_SELECTOR = _closed({"matchLabels": _OBJ, "matchExpressions": _ARR})
_SERVICE_MONITOR = _closed(
    {
        "selector": _SELECTOR,
        "endpoints": {"type": "array", "items": _ENDPOINT},
        "namespaceSelector": _closed({"any": _BOOL, "matchNames": _ARR}),
        "jobLabel": _STR,
        "targetLabels": _ARR,
        "podTargetLabels": _ARR,
        "sampleLimit": _INT,
        "targetLimit": _INT,
        "labelLimit": _INT,
        "labelNameLengthLimit": _INT,
        "labelValueLengthLimit": _INT,
        "keepDroppedTargets": _INT,
        "attachMetadata": _OBJ,
        "scrapeClass": _STR,
        "scrapeProtocols": _ARR,
        "bodySizeLimit": _STR,
    },
    ("selector",),
)
_POD_MONITOR = _closed(
    {
        "selector": _SELECTOR,
        "podMetricsEndpoints": {
            "type": "array",
            "items": {
                **_ENDPOINT,
                "properties": {
                    **{k: v for k, v in _ENDPOINT["properties"].items() if k != "targetPort"},
                    "portNumber": _INT,
                },
            },
        },
        "namespaceSelector": _closed({"any": _BOOL, "matchNames": _ARR}),
        "jobLabel": _STR,
        "podTargetLabels": _ARR,
        "sampleLimit": _INT,
        "targetLimit": _INT,
        "attachMetadata": _OBJ,
        "scrapeClass": _STR,
    },
    ("selector",),
)
_RULE = {
    "type": "object",
    "properties": {
        "alert": _STR,
        "record": _STR,
        "expr": {"anyOf": [_STR, _INT]},
        "for": _DURATION,
        "keep_firing_for": _DURATION,
        "labels": {"type": "object", "additionalProperties": _STR},
        "annotations": {"type": "object", "additionalProperties": _STR},
    },
    "required": ["expr"],
    "additionalProperties": False,
    "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
}
_PROMETHEUS_RULE = _closed(
    {
        "groups": {
            "type": "array",
            "items": _closed(
                {
                    "name": {"type": "string", "minLength": 1},
                    "interval": _DURATION,
                    "query_offset": _DURATION,
                    "limit": _INT,
                    "labels": _OBJ,
                    "partial_response_strategy": _STR,
                    "rules": {"type": "array", "items": _RULE},
                },
                ("name",),
            ),
        }
    }
)
_USAGES = [
    "signing", "digital signature", "content commitment", "key encipherment", "key agreement",
    "data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
    "server auth", "client auth", "code signing", "email protection", "s/mime",
    "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
    "microsoft sgc", "netscape sgc",
]  # fmt: skip
_GO_DURATION: dict[str, Any] = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(h|m|s|ms))+$"}
_CERTIFICATE = _closed(
    {
        "secretName": _STR,
        "issuerRef": _closed({"name": _STR, "kind": _STR, "group": _STR}, ("name",)),
        "commonName": _STR,
        "dnsNames": {"type": "array", "items": _STR},
        "ipAddresses": {"type": "array", "items": _STR},
        "uris": {"type": "array", "items": _STR},
        "emailAddresses": {"type": "array", "items": _STR},
        "duration": _GO_DURATION,
        "renewBefore": _GO_DURATION,
        "renewBeforePercentage": _INT,
        "isCA": _BOOL,
        "usages": {"type": "array", "items": {"enum": _USAGES}},
        "privateKey": _closed(
            {
                "algorithm": {"enum": ["RSA", "ECDSA", "Ed25519"]},
                "size": _INT,
                "encoding": {"enum": ["PKCS1", "PKCS8"]},
                "rotationPolicy": {"enum": ["Never", "Always"]},
            }
        ),
        "subject": _OBJ,
        "secretTemplate": _OBJ,
        "revisionHistoryLimit": _INT,
    },
    ("secretName", "issuerRef"),
)
_ISSUER = {
    **_closed(
        {
            "selfSigned": _closed({"crlDistributionPoints": _ARR}),
            "ca": _closed({"secretName": _STR}, ("secretName",)),
            "acme": _OBJ,
            "vault": _OBJ,
            "venafi": _OBJ,
        }
    ),
    "minProperties": 1,
    "maxProperties": 1,
}

SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): _resource(
        "monitoring.coreos.com/v1", "ServiceMonitor", _SERVICE_MONITOR
    ),
    ("monitoring.coreos.com/v1", "PodMonitor"): _resource(
        "monitoring.coreos.com/v1", "PodMonitor", _POD_MONITOR
    ),
    ("monitoring.coreos.com/v1", "PrometheusRule"): _resource(
        "monitoring.coreos.com/v1", "PrometheusRule", _PROMETHEUS_RULE
    ),
    ("cert-manager.io/v1", "Certificate"): _resource(
        "cert-manager.io/v1", "Certificate", _CERTIFICATE
    ),
    ("cert-manager.io/v1", "Issuer"): _resource("cert-manager.io/v1", "Issuer", _ISSUER),
}
"""By ``(apiVersion, kind)``."""
