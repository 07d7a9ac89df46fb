//! The JSON vmtrace prints: one document per command, of one shape
//! whatever the input (one run or several, one file or several), that
//! says what it is (`format`: `vmtrace-run`, ...) and which version of
//! that shape (`format_version`); and the JSON Schema of each, generated
//! from the same Rust types (`vmtrace generate schema COMMAND`, checked
//! in under docs/schema/, and the golden outputs validated against it).
//!
//! A recording (`export --format json`, the `.vmtrace.json` file) is a
//! document of its own, `vmtrace-recording`, versioned by
//! `model::recording::FORMAT_VERSION`.

use schemars::{JsonSchema, Schema, generate::SchemaSettings};
use serde::Serialize;
use serde_json::{Value, json};

use crate::analysis::{fleet::Fleet, sweep::Column};
use crate::model::{probes::Listed, recording::Recording, report::RunReport};
use crate::view::report::RunsTable;

/// The version of a command's document, unless it says otherwise
/// (`Document::VERSION`): raised when a field is renamed or removed or
/// changes its type; a new field does not raise it (a consumer ignores
/// what it does not know).
pub const FORMAT_VERSION: u32 = 1;

/// What a command prints with `--json`.
pub trait Document: Serialize + JsonSchema {
    /// The command (`run`): the document's `format` is `vmtrace-run`.
    const COMMAND: &'static str;
    /// Its `format_version`.
    const VERSION: u32 = FORMAT_VERSION;
}

/// `vmtrace run --json`.
#[derive(Serialize, JsonSchema)]
pub struct RunDocument<'a> {
    /// Every run's report, in the order they ran (one without --repeat).
    pub runs: Vec<&'a RunReport>,
    /// The runs side by side, as the text's table: elapsed per run,
    /// mean, spread.
    pub summary: &'a RunsTable,
}

impl Document for RunDocument<'_> {
    const COMMAND: &'static str = "run";
}

/// `vmtrace attach --json`: the report of the window traced.
#[derive(Serialize, JsonSchema)]
pub struct AttachDocument<'a> {
    pub report: &'a RunReport,
}

impl Document for AttachDocument<'_> {
    const COMMAND: &'static str = "attach";
}

/// `vmtrace report --json FILE...`.
#[derive(Serialize, JsonSchema)]
pub struct ReportDocument<'a> {
    /// Each file's recording, in the order the files were given.
    pub recordings: Vec<&'a Recording>,
}

impl Document for ReportDocument<'_> {
    const COMMAND: &'static str = "report";
}

/// `vmtrace compare --json`.
#[derive(Serialize, JsonSchema)]
pub struct CompareDocument<'a> {
    /// Where the groups came from: local recordings, or hosts read from
    /// a Prometheus-compatible query API (`--prometheus`).
    pub source: Source,
    /// One comparison per sweep value (`-j5`, ...); one without a sweep.
    /// Empty for `prometheus`.
    pub columns: &'a [Column],
    /// Sweep values some group lacks, so not compared.
    pub not_compared: &'a [String],
    /// The fleet's comparison (`prometheus` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<&'a Fleet>,
}

/// Where a comparison's groups came from.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `.vmtrace.json` files.
    Recordings,
    /// Hosts' rates from a Prometheus-compatible query API.
    Prometheus,
}

impl Document for CompareDocument<'_> {
    const COMMAND: &'static str = "compare";
    /// 3: a hint's `evidence` (its numbers: measures' two means,
    /// shares, the way in that moved, OOM victims, zone shares) in place
    /// of its sentence (`text`), which the text output writes from
    /// them; the unit `persecond` is `per_second` (every id snake_case);
    /// the profile inside the stalls (`profile`).
    /// 2: measures, mechanisms, components, settings and verdicts are
    /// `{"id", "label"}` objects (1: their labels as strings); a guard's
    /// `values` are each group's typed values (1: the printed lines).
    const VERSION: u32 = 3;
}

/// `vmtrace probes --json`: the catalogue against this kernel.
#[derive(Serialize, JsonSchema)]
pub struct ProbesDocument<'a> {
    /// The running kernel's release (`uname -r`).
    pub kernel: &'a str,
    pub probes: &'a [Listed],
}

impl Document for ProbesDocument<'_> {
    const COMMAND: &'static str = "probes";
}

/// A document with its `format` and `format_version` first.
#[derive(Serialize)]
struct Envelope<'a, D> {
    format: String,
    format_version: u32,
    #[serde(flatten)]
    body: &'a D,
}

/// The document as vmtrace prints it: pretty, with its envelope.
pub fn to_json<D: Document>(doc: &D) -> serde_json::Result<String> {
    serde_json::to_string_pretty(&Envelope {
        format: format!("vmtrace-{}", D::COMMAND),
        format_version: D::VERSION,
        body: doc,
    })
}

/// The commands whose JSON has a schema, and `recording` (the file).
pub const SCHEMAS: [&str; 6] = ["run", "attach", "report", "compare", "probes", "recording"];

/// The JSON Schema (draft 2020-12) of what `command` prints with
/// `--json`, or of a recording; None for a name not in `SCHEMAS`.
pub fn schema(command: &str) -> Option<Value> {
    let schema = match command {
        "run" => document_schema::<RunDocument>(),
        "attach" => document_schema::<AttachDocument>(),
        "report" => document_schema::<ReportDocument>(),
        "compare" => document_schema::<CompareDocument>(),
        "probes" => document_schema::<ProbesDocument>(),
        "recording" => {
            let mut s = generator().into_root_schema_for::<Recording>();
            s.insert("title".into(), json!("vmtrace recording (.vmtrace.json)"));
            s
        }
        _ => return None,
    };
    let mut v = schema.to_value();
    close_objects(&mut v);
    Some(v)
}

fn generator() -> schemars::SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
}

/// `D`'s schema with the envelope's two fields.
fn document_schema<D: Document>() -> Schema {
    let mut s = generator().into_root_schema_for::<D>();
    let format = format!("vmtrace-{}", D::COMMAND);
    s.insert(
        "title".into(),
        json!(format!("vmtrace {} --json", D::COMMAND)),
    );
    if let Some(Value::Object(props)) = s.get_mut("properties") {
        props.insert(
            "format".into(),
            json!({ "const": format, "description": "What the document is." }),
        );
        props.insert(
            "format_version".into(),
            json!({
                "const": D::VERSION,
                "description": "The version of the document's shape."
            }),
        );
    }
    if let Some(Value::Array(required)) = s.get_mut("required") {
        required.insert(0, json!("format_version"));
        required.insert(0, json!("format"));
    }
    s
}

/// Every object with named properties admits no others: vmtrace prints
/// only what its types hold, so a field the schema does not know is a
/// schema out of date (and a consumer's typo is caught). Properties
/// merged from a flattened type or a `$ref` are evaluated too, hence
/// `unevaluatedProperties` rather than `additionalProperties`.
fn close_objects(v: &mut Value) {
    match v {
        Value::Object(map) => {
            if map.contains_key("properties")
                && !map.contains_key("additionalProperties")
                && !map.contains_key("unevaluatedProperties")
            {
                map.insert("unevaluatedProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_document_names_itself_and_its_version_first() {
        let table = RunsTable {
            columns: Vec::new(),
        };
        let doc = RunDocument {
            runs: Vec::new(),
            summary: &table,
        };
        let text = to_json(&doc).expect("serialises");
        let v: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(v["format"], "vmtrace-run");
        assert_eq!(v["format_version"], FORMAT_VERSION);
        assert!(v["runs"].is_array() && v["summary"].is_object(), "{v}");
        // In that order: a reader of the head knows what follows.
        let format_at = text.find("\"format\"").expect("format");
        assert!(format_at < text.find("\"runs\"").expect("runs"), "{text}");
    }

    #[test]
    fn every_schema_requires_the_envelope_and_closes_its_objects() {
        for command in SCHEMAS {
            let s = schema(command).expect("a schema");
            assert_eq!(
                s["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{command}"
            );
            let required = s["required"].as_array().expect("required");
            assert!(
                required.contains(&json!("format")) && required.contains(&json!("format_version")),
                "{command}: {required:?}"
            );
            assert_eq!(s["unevaluatedProperties"], false, "{command}");
        }
        assert_eq!(
            schema("run").expect("run")["properties"]["format"]["const"],
            "vmtrace-run"
        );
        assert!(schema("nonesuch").is_none());
    }
}
