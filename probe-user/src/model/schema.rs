//! JSON Schema for the types that serialise as one of a fixed set of
//! names (measures, mechanisms, budget components, settings, metric
//! ids): their schema lists every name, so that a consumer of vmtrace's
//! JSON knows each value a field can hold. The derived schemas of the
//! other types come from `#[derive(schemars::JsonSchema)]` beside their
//! `Serialize`.

use schemars::{Schema, json_schema};

/// A string that is one of `names`.
pub fn one_of_names(names: impl IntoIterator<Item = &'static str>) -> Schema {
    let names: Vec<&str> = names.into_iter().collect();
    json_schema!({ "type": "string", "enum": names })
}

/// Implements `schemars::JsonSchema` for a type serialised as a name:
/// `names_schema!(Type, expression yielding every name)`.
macro_rules! names_schema {
    ($ty:ident, $names:expr) => {
        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $crate::model::schema::one_of_names($names)
            }
        }
    };
}
pub(crate) use names_schema;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_type_lists_every_name() {
        let s = one_of_names(["a", "b"]);
        assert_eq!(
            serde_json::to_value(&s).expect("a schema is JSON"),
            serde_json::json!({"type": "string", "enum": ["a", "b"]})
        );
    }
}
