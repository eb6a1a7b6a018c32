//! The full typed round trip (JSON → a k8s-openapi struct → JSON) with the paths of the
//! unknown fields it drops, as kube's decoder prints them; [`super::roundtrip`] and
//! [`super::rest`] take shortcuts around it and fall back to it. May use: registry (strategy).

use crate::registry::strategy::Input;
use serde_json::Value;

/// A canonical object and the unknown fields its decode dropped.
type Decoded = (Value, Vec<String>);

/// The round trip of every field.
pub(super) fn full<T>(obj: Input<'_>) -> Result<Decoded, String>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let mut unknown = Vec::new();
    let typed: T = match obj {
        Input::Value(v) => serde_ignored::deserialize(v, |path| unknown.push(field_path(&path))),
        Input::Json(bytes) => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            let typed = serde_ignored::deserialize(&mut de, |path| unknown.push(field_path(&path)));
            typed.and_then(|t| de.end().map(|()| t))
        }
    }
    .map_err(|e| e.to_string())?;
    let out = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    Ok((out, unknown))
}

/// A field path as kube prints it: `spec.containers[0].x`, skipping Option/newtype layers.
pub(super) fn field_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", field_path(parent)),
        Path::Map { parent, key } => {
            let p = field_path(parent);
            if p.is_empty() {
                key.to_string()
            } else {
                format!("{p}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => field_path(parent),
    }
}
