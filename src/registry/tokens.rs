//! TokenRequest, the `serviceaccounts/token` subresource (pkg/registry/core/serviceaccount/
//! storage/token.go): a bound token for a service account, for the requested audiences and
//! lifetime, optionally bound to a Secret of its namespace. Nothing is stored.
//! May use: registry, serviceaccount, api.

use super::error::{Error, FieldError, Result};
use super::strategy::{str_at, typed_roundtrip, Input};
use super::{Context, GenericStore, Registry, Resource};
use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use crate::serviceaccount::jwt::{self, Claims, Kubernetes, Ref};
use crate::serviceaccount::{DEFAULT_EXPIRATION, MIN_EXPIRATION};
use serde_json::{json, Map, Value};
use std::sync::Arc;

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";

fn invalid(name: &str, errors: Vec<FieldError>) -> Error {
    Error::invalid(GROUP, KIND, name, errors)
}

fn store(registry: &Registry, resource: &str) -> Result<Arc<GenericStore>> {
    match registry
        .resources()
        .lookup("", "v1", resource)
        .map(|r| &**r)
    {
        Some(Resource::Stored(s)) => Ok(Arc::clone(s)),
        _ => Err(Error::Internal(format!("{resource} are not served"))),
    }
}

/// What a TokenRequest yields: the answer, and the warnings for the client.
pub(crate) struct Issued {
    /// The TokenRequest with its status.
    pub object: Value,
    /// e.g. the lifetime was shortened to the maximum.
    pub warnings: Vec<String>,
}

/// Issues a token for service account `name` in `namespace`, as asked by `body` (a decoded
/// TokenRequest).
pub(crate) async fn request(
    registry: &Registry,
    namespace: &str,
    name: &str,
    body: Value,
) -> Result<Issued> {
    let issuer = registry
        .token_issuer()
        .ok_or_else(|| Error::Internal("no service-account token issuer".into()))?;
    let bad = |e: String| {
        Error::BadRequest(format!(
            "{KIND} in version \"v1\" cannot be handled as a {KIND}: {e}"
        ))
    };
    let (req, _) =
        typed_roundtrip::<k8s_openapi::api::authentication::v1::TokenRequest>(Input::Value(body))
            .map_err(bad)?;
    for (field, given, have) in [
        ("metadata.name", str_at(&req, "/metadata/name"), name),
        (
            "metadata.namespace",
            str_at(&req, "/metadata/namespace"),
            namespace,
        ),
    ] {
        if !given.is_empty() && given != have {
            let what = field.trim_start_matches("metadata.");
            return Err(invalid(
                name,
                vec![FieldError::invalid(
                    field,
                    given,
                    format!("must match the service account {what} if specified"),
                )],
            ));
        }
    }
    let ctx = Context {
        namespace: namespace.to_string(),
        ..Context::default()
    };
    let sa = store(registry, "serviceaccounts")?
        .get_shared(&ctx, name)
        .await?;
    let sa_uid = str_at(&sa.obj, "/metadata/uid").to_string();

    let mut spec = req.get("spec").cloned().unwrap_or_else(|| json!({}));
    if spec
        .get("audiences")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec["audiences"] = json!(issuer.audiences);
    }
    let mut seconds = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_EXPIRATION.as_secs() as i64);
    if seconds < MIN_EXPIRATION.as_secs() as i64 {
        return Err(invalid(
            "",
            vec![FieldError::invalid_raw(
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration less than 10 minutes",
            )],
        ));
    }
    if seconds > 1 << 32 {
        return Err(invalid(
            "",
            vec![FieldError::invalid_raw(
                "spec.expirationSeconds",
                seconds,
                "may not specify a duration larger than 2^32 seconds",
            )],
        ));
    }

    let mut secret = None;
    if let Some(r) = spec.get("boundObjectRef").filter(|r| !r.is_null()) {
        let (api_version, kind, obj_name, obj_uid) = (
            str_at(r, "/apiVersion"),
            str_at(r, "/kind"),
            str_at(r, "/name"),
            str_at(r, "/uid"),
        );
        let group = api_version.split_once('/').map_or("", |(g, _)| g);
        if group.is_empty() && kind == "Secret" {
            let found = store(registry, "secrets")?
                .get_shared(&ctx, obj_name)
                .await?;
            let uid = str_at(&found.obj, "/metadata/uid").to_string();
            if !obj_uid.is_empty() && obj_uid != uid {
                return Err(Error::Conflict {
                    group: String::new(),
                    resource: "Secret".into(),
                    name: obj_name.into(),
                    message: format!(
                        "the UID in the bound object reference ({obj_uid}) does not match the UID in record. The object might have been deleted and then recreated"
                    ),
                });
            }
            secret = Some(Ref {
                name: obj_name.into(),
                uid,
            });
        } else {
            let version = api_version.rsplit('/').next().unwrap_or("");
            return Err(Error::BadRequest(format!(
                "cannot bind token for serviceaccount {name:?} to object of type {group}/{version}, Kind={kind}"
            )));
        }
    }
    let mut warnings = Vec::new();
    if let Some(max) = issuer.max_expiration {
        let max = max.as_secs() as i64;
        if seconds > max {
            warnings.push(format!(
                "requested expiration of {seconds} seconds shortened to {max} seconds"
            ));
            seconds = max;
        }
    }
    spec["expirationSeconds"] = Value::from(seconds);

    let now = chrono::Utc::now();
    let iat = now.timestamp();
    let audiences: Vec<String> = spec["audiences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let claims = Claims {
        aud: audiences,
        exp: iat + seconds,
        iat,
        iss: issuer.issuer().to_string(),
        jti: crate::api::new_uuid().to_string(),
        kubernetes: Kubernetes {
            namespace: namespace.to_string(),
            secret,
            serviceaccount: Ref {
                name: name.to_string(),
                uid: sa_uid,
            },
        },
        nbf: iat,
        sub: format!("system:serviceaccount:{namespace}:{name}"),
    };
    let token = jwt::issue(&issuer.signing, &claims)
        .map_err(|e| Error::Internal(format!("failed to sign the token: {e}")))?;
    let expires = now + chrono::Duration::seconds(seconds);
    let object = json!({
        "kind": KIND,
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": now.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        },
        "spec": spec,
        "status": {
            "token": token,
            "expirationTimestamp": expires.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        },
    });
    Ok(Issued { object, warnings })
}

/// Decodes the protobuf form of a TokenRequest (kubectl create token sends it).
pub(crate) fn from_protobuf(raw: &[u8]) -> std::result::Result<Map<String, Value>, ProtobufError> {
    let r = message::<k8s_pb::api::authentication::v1::TokenRequest>(raw, KIND)?;
    let spec = r.spec.as_ref().map(|s| {
        let bound = s.bound_object_ref.as_ref().map(|b| {
            Obj::default()
                .str("kind", &b.kind)
                .str("apiVersion", &b.api_version)
                .str("name", &b.name)
                .str("uid", &b.u_id)
        });
        Obj::default()
            .strs("audiences", &s.audiences)
            .opt_int("expirationSeconds", s.expiration_seconds)
            .obj("boundObjectRef", bound)
    });
    Ok(metadata(&r.metadata).obj("spec", spec).into_map())
}
