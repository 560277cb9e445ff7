//! The one place that decides which Delta protocol a table needs (Delta
//! protocol, "Table Features" and "Protocol Evolution"): the `delta.*`
//! properties Lakegres accepts, what each asks of the protocol, and the
//! protocol a table's metadata requires — raised in the same commit as the
//! metadata that needs it, or refused when Lakegres cannot keep the
//! feature's promises.
//!
//! A table stays on the legacy versions (reader 1–2, writer 2–6) while
//! every feature it uses has one, as Databricks keeps it; a feature without
//! one (deletion vectors, timestampNtz, domain metadata, clustering) moves
//! it to table features (reader 3 / writer 7), listing the features its old
//! versions implied.

use std::collections::{BTreeSet, HashMap};

use deltalake::kernel::{DataType, MetadataValue, Protocol, StructField, StructType};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use lakegres_common::SqlState;

/// A table feature Lakegres may turn on, by its protocol name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Feature {
    AppendOnly,
    Invariants,
    CheckConstraints,
    ChangeDataFeed,
    GeneratedColumns,
    ColumnMapping,
    IdentityColumns,
    DeletionVectors,
    TimestampNtz,
    DomainMetadata,
    Clustering,
    TypeWidening,
    AllowColumnDefaults,
}

impl Feature {
    /// The name in `readerFeatures` / `writerFeatures`.
    pub fn name(self) -> &'static str {
        match self {
            Self::AppendOnly => "appendOnly",
            Self::Invariants => "invariants",
            Self::CheckConstraints => "checkConstraints",
            Self::ChangeDataFeed => "changeDataFeed",
            Self::GeneratedColumns => "generatedColumns",
            Self::ColumnMapping => "columnMapping",
            Self::IdentityColumns => "identityColumns",
            Self::DeletionVectors => "deletionVectors",
            Self::TimestampNtz => "timestampNtz",
            Self::DomainMetadata => "domainMetadata",
            Self::Clustering => "clustering",
            Self::TypeWidening => "typeWidening",
            Self::AllowColumnDefaults => "allowColumnDefaults",
        }
    }

    /// A reader-writer feature (readers must know it too).
    pub fn for_readers(self) -> bool {
        matches!(
            self,
            Self::ColumnMapping | Self::DeletionVectors | Self::TimestampNtz | Self::TypeWidening
        )
    }

    /// The legacy (reader, writer) versions that first implied it.
    pub fn legacy_versions(self) -> Option<(i64, i64)> {
        match self {
            Self::AppendOnly | Self::Invariants => Some((1, 2)),
            Self::CheckConstraints => Some((1, 3)),
            Self::ChangeDataFeed | Self::GeneratedColumns => Some((1, 4)),
            Self::ColumnMapping => Some((2, 5)),
            Self::IdentityColumns => Some((1, 6)),
            _ => None,
        }
    }

    /// Features that need another to be on (Delta protocol: clustering
    /// keeps its columns in domain metadata).
    fn needs(self) -> &'static [Feature] {
        match self {
            Self::Clustering => &[Self::DomainMetadata],
            _ => &[],
        }
    }
}

/// Every feature, in protocol order.
pub const FEATURES: &[Feature] = &[
    Feature::AppendOnly,
    Feature::Invariants,
    Feature::CheckConstraints,
    Feature::ChangeDataFeed,
    Feature::GeneratedColumns,
    Feature::ColumnMapping,
    Feature::IdentityColumns,
    Feature::DeletionVectors,
    Feature::TimestampNtz,
    Feature::DomainMetadata,
    Feature::Clustering,
    Feature::TypeWidening,
    Feature::AllowColumnDefaults,
];

/// What a `delta.*` property asks of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A setting with no protocol feature behind it.
    Plain,
    /// `true` turns the feature on.
    Enables(Feature),
    /// `delta.columnMapping.mode`: `name` turns column mapping on.
    ColumnMappingMode,
    /// `delta.minReaderVersion` / `delta.minWriterVersion`: raise the
    /// protocol to at least that version; not kept in the configuration.
    MinVersion,
    /// Accepted by Databricks, but Lakegres cannot yet keep what the
    /// feature promises; `true` is refused, `false` accepted.
    NotYet(&'static str),
    /// `delta.feature.<name> = 'supported'`: turns the feature on; not kept
    /// as a property (Databricks keeps it in the protocol only).
    Supported(Feature),
}

/// The `delta.*` table properties Lakegres accepts, canonically spelled.
pub const PROPERTIES: &[(&str, Rule)] = &[
    ("delta.appendOnly", Rule::Enables(Feature::AppendOnly)),
    ("delta.autoOptimize.autoCompact", Rule::Plain),
    ("delta.autoOptimize.optimizeWrite", Rule::Plain),
    ("delta.checkpointInterval", Rule::Plain),
    ("delta.checkpoint.writeStatsAsJson", Rule::Plain),
    ("delta.checkpoint.writeStatsAsStruct", Rule::Plain),
    ("delta.columnMapping.mode", Rule::ColumnMappingMode),
    ("delta.dataSkippingNumIndexedCols", Rule::Plain),
    ("delta.dataSkippingStatsColumns", Rule::Plain),
    ("delta.deletedFileRetentionDuration", Rule::Plain),
    (
        "delta.enableChangeDataFeed",
        Rule::Enables(Feature::ChangeDataFeed),
    ),
    (
        "delta.enableDeletionVectors",
        Rule::Enables(Feature::DeletionVectors),
    ),
    ("delta.enableExpiredLogCleanup", Rule::Plain),
    (
        "delta.feature.allowColumnDefaults",
        Rule::Supported(Feature::AllowColumnDefaults),
    ),
    ("delta.enableRowTracking", Rule::NotYet("rowTracking")),
    (
        "delta.enableTypeWidening",
        Rule::Enables(Feature::TypeWidening),
    ),
    ("delta.isolationLevel", Rule::Plain),
    ("delta.logRetentionDuration", Rule::Plain),
    ("delta.minReaderVersion", Rule::MinVersion),
    ("delta.minWriterVersion", Rule::MinVersion),
    ("delta.randomizeFilePrefixes", Rule::Plain),
    ("delta.setTransactionRetentionDuration", Rule::Plain),
    ("delta.targetFileSize", Rule::Plain),
    ("delta.tuneFileSizesForRewrites", Rule::Plain),
];

/// The column mapping mode key.
pub const COLUMN_MAPPING_MODE: &str = "delta.columnMapping.mode";
/// The highest column id a column-mapped table has given out.
pub const COLUMN_MAPPING_MAX_ID: &str = "delta.columnMapping.maxColumnId";
/// A field's column-mapping id and physical name (field metadata).
pub const COLUMN_MAPPING_ID: &str = "delta.columnMapping.id";
pub const COLUMN_MAPPING_PHYSICAL_NAME: &str = "delta.columnMapping.physicalName";
/// A column's default value, SQL text (Spark's field metadata key).
pub const CURRENT_DEFAULT: &str = "CURRENT_DEFAULT";

/// The column metadata key that makes a column an identity column (Delta
/// protocol, "Identity Columns").
pub const IDENTITY_START: &str = "delta.identity.start";

/// The canonical spelling of a `delta.*` key Lakegres accepts.
pub fn canonical_property(key: &str) -> Option<&'static str> {
    PROPERTIES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(key))
        .map(|(known, _)| *known)
}

fn rule(key: &str) -> Option<Rule> {
    PROPERTIES
        .iter()
        .find(|(known, _)| *known == key)
        .map(|(_, rule)| *rule)
}

fn refused(class: &str, state: SqlState, message: String) -> Error {
    Error::Refused {
        message: format!("[{class}] {message}"),
        state,
    }
}

fn is_true(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Checks a property's value against its rule: booleans for features,
/// `none`/`name` for the column mapping mode, 1–3 / 2–7 for versions.
pub fn check_property(key: &str, value: &str) -> Result<()> {
    let invalid = |expected: &str| {
        refused(
            "DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED",
            SqlState::INVALID_PARAMETER_VALUE,
            format!("{key} = '{value}' is not valid: {expected}"),
        )
    };
    match rule(key) {
        Some(Rule::Enables(_)) => is_true(value).map(|_| ()).ok_or(invalid("true or false")),
        Some(Rule::NotYet(feature)) => match is_true(value) {
            Some(false) => Ok(()),
            Some(true) => Err(refused(
                "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE",
                SqlState::DELTA_FEATURE_NOT_SUPPORTED,
                format!(
                    "{key} = true needs the table feature {feature}, which Lakegres cannot \
                     write yet"
                ),
            )),
            None => Err(invalid("true or false")),
        },
        Some(Rule::ColumnMappingMode) => match value.trim().to_ascii_lowercase().as_str() {
            "none" | "name" => Ok(()),
            "id" => Err(refused(
                "DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE",
                SqlState::DELTA_FEATURE_NOT_SUPPORTED,
                "column mapping mode 'id' is not supported; use 'name'".into(),
            )),
            _ => Err(invalid("'none' or 'name'")),
        },
        Some(Rule::MinVersion) => {
            let range = if key == "delta.minReaderVersion" {
                1..=3
            } else {
                2..=7
            };
            match value.trim().parse::<i64>() {
                Ok(v) if range.contains(&v) => Ok(()),
                _ => Err(invalid(&format!(
                    "a version from {} to {}",
                    range.start(),
                    range.end()
                ))),
            }
        }
        Some(Rule::Supported(_)) => match value.trim().to_ascii_lowercase().as_str() {
            "supported" | "enabled" => Ok(()),
            _ => Err(invalid("'supported'")),
        },
        Some(Rule::Plain) | None => Ok(()),
    }
}

/// A checked property's value as stored: `delta.targetFileSize` written
/// with a unit (`'128mb'`, as Databricks takes it, 1024-based like Spark's
/// byte strings) becomes its number of bytes, which every Delta writer
/// reads (delta-rs ignored a unit and kept its 100 MiB default); other
/// values are kept as written.
pub fn property_value(key: &str, value: &str) -> Result<String> {
    check_property(key, value)?;
    if key != "delta.targetFileSize" {
        return Ok(value.to_string());
    }
    byte_size(value)
        .map(|bytes| bytes.to_string())
        .ok_or_else(|| {
            refused(
                "DELTA_VIOLATE_TABLE_PROPERTY_VALIDATION_FAILED",
                SqlState::INVALID_PARAMETER_VALUE,
                format!("{key} = '{value}' is not valid: a size such as '134217728' or '128mb'"),
            )
        })
}

/// Bytes of a size such as `1048576`, `512k`, `128mb` or `1 GB` (Spark's
/// `byteStringAsBytes`: b, k, m, g, t, p, with or without a trailing b).
fn byte_size(text: &str) -> Option<u64> {
    let text = text.trim().to_ascii_lowercase();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let shift = match unit.trim() {
        "" | "b" => 0,
        "k" | "kb" => 10,
        "m" | "mb" => 20,
        "g" | "gb" => 30,
        "t" | "tb" => 40,
        "p" | "pb" => 50,
        _ => return None,
    };
    number.checked_mul(1u64 << shift).filter(|&bytes| bytes > 0)
}

/// Whether the configuration turns column mapping on.
pub fn column_mapping(configuration: &HashMap<String, String>) -> bool {
    configuration
        .get(COLUMN_MAPPING_MODE)
        .is_some_and(|m| m.eq_ignore_ascii_case("name") || m.eq_ignore_ascii_case("id"))
}

/// What a table's metadata needs: the features its configuration, schema
/// and clustering use.
pub(crate) fn required_features(
    configuration: &HashMap<String, String>,
    schema: &StructType,
    clustered: bool,
) -> BTreeSet<Feature> {
    let mut features = BTreeSet::new();
    for (key, value) in configuration {
        match rule(key) {
            Some(Rule::Enables(f)) if is_true(value) == Some(true) => {
                features.insert(f);
            }
            Some(Rule::ColumnMappingMode) if column_mapping(configuration) => {
                features.insert(Feature::ColumnMapping);
            }
            Some(Rule::Supported(f)) => {
                features.insert(f);
            }
            _ => {}
        }
        if key.starts_with(crate::table::constraints::CONSTRAINT_PREFIX) {
            features.insert(Feature::CheckConstraints);
        }
    }
    for field in schema.fields() {
        column_features(field, &mut features);
    }
    if clustered {
        features.insert(Feature::Clustering);
    }
    let needed: Vec<Feature> = features.iter().flat_map(|f| f.needs()).copied().collect();
    features.extend(needed);
    features
}

fn column_features(field: &StructField, features: &mut BTreeSet<Feature>) {
    let metadata = field.metadata();
    if metadata.contains_key(crate::table::constraints::GENERATION_EXPRESSION) {
        features.insert(Feature::GeneratedColumns);
    }
    if metadata.contains_key(IDENTITY_START) {
        features.insert(Feature::IdentityColumns);
    }
    if metadata.contains_key("delta.invariants") {
        features.insert(Feature::Invariants);
    }
    if metadata.contains_key(CURRENT_DEFAULT) {
        features.insert(Feature::AllowColumnDefaults);
    }
    type_features(field.data_type(), features);
}

fn type_features(data_type: &DataType, features: &mut BTreeSet<Feature>) {
    match data_type {
        DataType::Primitive(deltalake::kernel::PrimitiveType::TimestampNtz) => {
            features.insert(Feature::TimestampNtz);
        }
        DataType::Array(a) => type_features(a.element_type(), features),
        DataType::Map(m) => {
            type_features(m.key_type(), features);
            type_features(m.value_type(), features);
        }
        DataType::Struct(s) => s.fields().for_each(|f| column_features(f, features)),
        _ => {}
    }
}

/// The explicit versions the configuration asks for.
fn explicit_versions(configuration: &HashMap<String, String>) -> (i64, i64) {
    let version = |key: &str| {
        configuration
            .get(key)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(0)
    };
    (
        version("delta.minReaderVersion"),
        version("delta.minWriterVersion"),
    )
}

/// Whether `protocol` (as JSON) supports `feature`.
pub fn supports(protocol: &Value, feature: Feature) -> bool {
    let (reader, writer) = versions(protocol);
    let listed = |list: &str| {
        protocol[list]
            .as_array()
            .is_some_and(|a| a.iter().any(|f| f.as_str() == Some(feature.name())))
    };
    if writer >= 7 {
        listed("writerFeatures")
            && (!feature.for_readers()
                || (reader >= 3 && listed("readerFeatures"))
                || (reader == 2 && feature == Feature::ColumnMapping))
    } else {
        feature
            .legacy_versions()
            .is_some_and(|(r, w)| reader >= r && writer >= w)
    }
}

fn versions(protocol: &Value) -> (i64, i64) {
    (
        protocol["minReaderVersion"].as_i64().unwrap_or(1),
        protocol["minWriterVersion"].as_i64().unwrap_or(2),
    )
}

/// The protocol (as JSON) a table with `features` and explicit versions
/// needs, starting from `current`: `None` when `current` already does.
pub fn upgrade_json(
    current: &Value,
    features: &BTreeSet<Feature>,
    explicit: (i64, i64),
) -> Option<Value> {
    let (reader, writer) = versions(current);
    let missing: Vec<Feature> = features
        .iter()
        .copied()
        .filter(|f| !supports(current, *f))
        .collect();
    if missing.is_empty() && explicit.0 <= reader && explicit.1 <= writer {
        return None;
    }
    // Legacy versions while every missing feature has one.
    if writer < 7 && explicit.0 <= 2 && explicit.1 <= 6 {
        let legacy: Option<Vec<(i64, i64)>> = missing.iter().map(|f| f.legacy_versions()).collect();
        if let Some(legacy) = legacy {
            let reader = legacy
                .iter()
                .map(|v| v.0)
                .fold(reader.max(explicit.0), i64::max);
            let writer = legacy
                .iter()
                .map(|v| v.1)
                .fold(writer.max(explicit.1), i64::max);
            return Some(json!({ "minReaderVersion": reader, "minWriterVersion": writer }));
        }
    }
    // Table features: what the old versions implied, what the table
    // listed, and what it needs now.
    let mut writer_features: BTreeSet<&str> = BTreeSet::new();
    let mut reader_features: BTreeSet<&str> = BTreeSet::new();
    let list = |name: &str| -> Vec<String> {
        current[name]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let old_writer = list("writerFeatures");
    let old_reader = list("readerFeatures");
    writer_features.extend(old_writer.iter().map(String::as_str));
    reader_features.extend(old_reader.iter().map(String::as_str));
    for feature in FEATURES {
        if writer < 7 && supports(current, *feature) {
            writer_features.insert(feature.name());
            if feature.for_readers() {
                reader_features.insert(feature.name());
            }
        }
    }
    for feature in features {
        writer_features.insert(feature.name());
        if feature.for_readers() {
            reader_features.insert(feature.name());
        }
    }
    let needs_reader_features = features
        .iter()
        .any(|f| f.for_readers() && !supports(current, *f))
        || reader >= 3
        || explicit.0 >= 3;
    let mut protocol = if needs_reader_features {
        json!({
            "minReaderVersion": 3,
            "minWriterVersion": 7,
            "readerFeatures": reader_features.into_iter().collect::<Vec<_>>(),
        })
    } else {
        // Reader 1 or 2 beside writer 7; reader 2 still means column
        // mapping, which the writer list must then name.
        if reader == 2 {
            writer_features.insert(Feature::ColumnMapping.name());
        }
        json!({ "minReaderVersion": reader.max(explicit.0), "minWriterVersion": 7 })
    };
    protocol["writerFeatures"] = json!(writer_features.into_iter().collect::<Vec<_>>());
    Some(protocol)
}

/// The protocol action a table with `configuration`, `schema` and
/// clustering needs on top of `current` (`None` for a new table), or
/// `None` when it has it already.
pub(crate) fn upgrade(
    current: Option<&Protocol>,
    configuration: &HashMap<String, String>,
    schema: &StructType,
    clustered: bool,
) -> Result<Option<Protocol>> {
    let current = match current {
        Some(p) => serde_json::to_value(p)
            .map_err(|e| Error::Internal(format!("reading a protocol: {e}")))?,
        None => json!({ "minReaderVersion": 1, "minWriterVersion": 2 }),
    };
    let features = required_features(configuration, schema, clustered);
    match upgrade_json(&current, &features, explicit_versions(configuration)) {
        None => Ok(None),
        Some(protocol) => serde_json::from_value(protocol)
            .map(Some)
            .map_err(|e| Error::Internal(format!("a new protocol: {e}"))),
    }
}

/// Whether a key only changes the protocol and is not kept as a property
/// (`delta.minReaderVersion`, `delta.feature.*`; Databricks keeps neither).
pub fn protocol_only(key: &str) -> bool {
    matches!(rule(key), Some(Rule::MinVersion | Rule::Supported(_)))
}

/// The configuration a table keeps: without the keys that only change its
/// protocol.
pub fn kept_configuration(
    configuration: HashMap<String, Option<String>>,
) -> HashMap<String, Option<String>> {
    configuration
        .into_iter()
        .filter(|(k, _)| !protocol_only(k))
        .collect()
}

/// Gives every field of `schema` without one a column-mapping id and
/// physical name: `keep_names` (turning mapping on for an existing table)
/// uses the current name, so the data files need no rewrite; new columns
/// get `col-<uuid>`. Returns the schema and the highest id.
pub(crate) fn assign_column_mapping(
    schema: &StructType,
    mut max_id: i64,
    keep_names: bool,
) -> Result<(StructType, i64)> {
    fn assign(field: &StructField, max_id: &mut i64, keep_names: bool) -> Result<StructField> {
        let data_type = assign_type(field.data_type(), max_id, keep_names)?;
        let mut out = StructField::new(field.name().clone(), data_type, field.is_nullable())
            .with_metadata(field.metadata().clone());
        if !field.metadata().contains_key(COLUMN_MAPPING_ID) {
            *max_id += 1;
            let physical = if keep_names {
                field.name().clone()
            } else {
                format!("col-{}", uuid::Uuid::new_v4())
            };
            out = out.add_metadata([
                (
                    COLUMN_MAPPING_ID.to_string(),
                    MetadataValue::Number(*max_id),
                ),
                (
                    COLUMN_MAPPING_PHYSICAL_NAME.to_string(),
                    MetadataValue::String(physical),
                ),
            ]);
        }
        Ok(out)
    }
    fn assign_type(data_type: &DataType, max_id: &mut i64, keep_names: bool) -> Result<DataType> {
        Ok(match data_type {
            DataType::Struct(s) => DataType::Struct(Box::new(
                StructType::try_new(
                    s.fields()
                        .map(|f| assign(f, max_id, keep_names))
                        .collect::<Result<Vec<_>>>()?,
                )
                .map_err(|e| Error::Internal(format!("a mapped struct: {e}")))?,
            )),
            DataType::Array(a) => DataType::Array(Box::new(deltalake::kernel::ArrayType::new(
                assign_type(a.element_type(), max_id, keep_names)?,
                a.contains_null(),
            ))),
            DataType::Map(m) => DataType::Map(Box::new(deltalake::kernel::MapType::new(
                assign_type(m.key_type(), max_id, keep_names)?,
                assign_type(m.value_type(), max_id, keep_names)?,
                m.value_contains_null(),
            ))),
            other => other.clone(),
        })
    }
    let fields = schema
        .fields()
        .map(|f| assign(f, &mut max_id, keep_names))
        .collect::<Result<Vec<_>>>()?;
    let schema = StructType::try_new(fields)
        .map_err(|e| Error::Internal(format!("a mapped schema: {e}")))?;
    Ok((schema, max_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use deltalake::kernel::PrimitiveType;

    fn schema(fields: Vec<StructField>) -> StructType {
        StructType::try_new(fields).unwrap()
    }

    fn plain() -> StructType {
        schema(vec![StructField::new("id", DataType::LONG, true)])
    }

    /// The Delta protocol's rules for a protocol action, as a checker.
    fn check_spec(protocol: &Value, features: &BTreeSet<Feature>) {
        let (reader, writer) = versions(protocol);
        assert!((1..=3).contains(&reader), "{protocol}");
        assert!((2..=7).contains(&writer), "{protocol}");
        assert_eq!(
            protocol.get("readerFeatures").is_some(),
            reader == 3,
            "readerFeatures exactly when reader 3: {protocol}"
        );
        assert_eq!(
            protocol.get("writerFeatures").is_some(),
            writer == 7,
            "writerFeatures exactly when writer 7: {protocol}"
        );
        if reader == 3 {
            assert_eq!(writer, 7, "reader 3 needs writer 7: {protocol}");
            for f in protocol["readerFeatures"].as_array().unwrap() {
                let name = f.as_str().unwrap();
                let feature = FEATURES.iter().find(|x| x.name() == name).unwrap();
                assert!(feature.for_readers(), "{name} is not a reader feature");
                assert!(
                    protocol["writerFeatures"]
                        .as_array()
                        .unwrap()
                        .contains(&json!(name)),
                    "reader feature {name} must be a writer feature too: {protocol}"
                );
            }
        }
        if reader == 2 && writer == 7 {
            assert!(supports(protocol, Feature::ColumnMapping), "{protocol}");
        }
        for feature in features {
            assert!(supports(protocol, *feature), "{feature:?} in {protocol}");
        }
    }

    fn value_that_enables(key: &str) -> Option<&'static str> {
        match rule(key)? {
            Rule::Enables(_) => Some("true"),
            Rule::ColumnMappingMode => Some("name"),
            Rule::MinVersion if key == "delta.minReaderVersion" => Some("3"),
            Rule::MinVersion => Some("7"),
            Rule::Supported(_) => Some("supported"),
            Rule::Plain | Rule::NotYet(_) => None,
        }
    }

    #[test]
    fn every_accepted_property_yields_a_protocol_the_spec_allows() {
        let starts = [
            json!({ "minReaderVersion": 1, "minWriterVersion": 2 }),
            json!({ "minReaderVersion": 1, "minWriterVersion": 4 }),
            json!({ "minReaderVersion": 2, "minWriterVersion": 5 }),
            json!({ "minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly"] }),
            json!({ "minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [], "writerFeatures": [] }),
        ];
        for (key, rule) in PROPERTIES {
            let Some(value) = value_that_enables(key) else {
                if let Rule::NotYet(_) = rule {
                    assert!(check_property(key, "true").is_err(), "{key} is refused");
                    assert!(check_property(key, "false").is_ok());
                }
                continue;
            };
            check_property(key, value).unwrap();
            let configuration = HashMap::from([(key.to_string(), value.to_string())]);
            let features = required_features(&configuration, &plain(), false);
            for start in &starts {
                check_spec(start, &BTreeSet::new());
                let protocol = upgrade_json(start, &features, explicit_versions(&configuration))
                    .unwrap_or_else(|| start.clone());
                check_spec(&protocol, &features);
                // Whatever the start supported it still supports.
                for f in FEATURES {
                    if supports(start, *f) {
                        assert!(supports(&protocol, *f), "{key}: lost {f:?} from {start}");
                    }
                }
            }
        }
    }

    #[test]
    fn databricks_upgrades() {
        let legacy = json!({ "minReaderVersion": 1, "minWriterVersion": 2 });
        let one = |f: Feature| BTreeSet::from([f]);
        // Column mapping on a 1/2 table: 2/5, as Databricks does.
        assert_eq!(
            upgrade_json(&legacy, &one(Feature::ColumnMapping), (0, 0)).unwrap(),
            json!({ "minReaderVersion": 2, "minWriterVersion": 5 })
        );
        // Deletion vectors: 3/7 with the features writer 2 implied.
        assert_eq!(
            upgrade_json(&legacy, &one(Feature::DeletionVectors), (0, 0)).unwrap(),
            json!({
                "minReaderVersion": 3, "minWriterVersion": 7,
                "readerFeatures": ["deletionVectors"],
                "writerFeatures": ["appendOnly", "deletionVectors", "invariants"],
            })
        );
        // Clustering: writer-only features (and the domain metadata it
        // keeps its columns in), reader stays 1.
        let features = required_features(&HashMap::new(), &plain(), true);
        assert_eq!(
            features,
            BTreeSet::from([Feature::DomainMetadata, Feature::Clustering])
        );
        assert_eq!(
            upgrade_json(&legacy, &features, (0, 0)),
            Some(json!({
                "minReaderVersion": 1, "minWriterVersion": 7,
                "writerFeatures": ["appendOnly", "clustering", "domainMetadata", "invariants"],
            }))
        );
        // Column mapping then deletion vectors: reader 2 becomes the
        // columnMapping reader feature.
        let mapped = json!({ "minReaderVersion": 2, "minWriterVersion": 5 });
        let both = BTreeSet::from([Feature::ColumnMapping, Feature::DeletionVectors]);
        let protocol = upgrade_json(&mapped, &both, (0, 0)).unwrap();
        assert_eq!(
            protocol["readerFeatures"],
            json!(["columnMapping", "deletionVectors"])
        );
        check_spec(&protocol, &both);
        // Nothing to do.
        assert_eq!(
            upgrade_json(&mapped, &one(Feature::ColumnMapping), (0, 0)),
            None
        );
        // A timestamp_ntz column inside a struct.
        let nested = schema(vec![StructField::new(
            "s",
            DataType::Struct(Box::new(schema(vec![StructField::new(
                "t",
                DataType::Primitive(PrimitiveType::TimestampNtz),
                true,
            )]))),
            true,
        )]);
        assert!(required_features(&HashMap::new(), &nested, false).contains(&Feature::TimestampNtz));
    }

    #[test]
    fn values_are_checked() {
        assert!(check_property("delta.enableDeletionVectors", "yes").is_err());
        let size = |v: &str| property_value("delta.targetFileSize", v).ok();
        assert_eq!(size("128mb").as_deref(), Some("134217728"));
        assert_eq!(size(" 1 GB ").as_deref(), Some("1073741824"));
        assert_eq!(size("512k").as_deref(), Some("524288"));
        assert_eq!(size("1048576").as_deref(), Some("1048576"));
        assert_eq!(size("0"), None);
        assert_eq!(size("12 parsecs"), None);
        assert_eq!(size("99999999999pb"), None);
        assert_eq!(
            property_value("delta.appendOnly", "TRUE").ok().as_deref(),
            Some("TRUE")
        );
        assert!(check_property("delta.columnMapping.mode", "id").is_err());
        assert!(check_property("delta.columnMapping.mode", "Name").is_ok());
        assert!(check_property("delta.minWriterVersion", "8").is_err());
        assert!(check_property("delta.enableRowTracking", "true").is_err());
        assert!(check_property("delta.enableTypeWidening", "true").is_ok());
    }

    #[test]
    fn column_mapping_keeps_existing_names() {
        let nested = schema(vec![
            StructField::new("a", DataType::LONG, true).with_metadata([("comment", "kept")]),
            StructField::new(
                "s",
                DataType::Struct(Box::new(schema(vec![StructField::new(
                    "x",
                    DataType::STRING,
                    true,
                )]))),
                true,
            ),
        ]);
        let (mapped, max) = assign_column_mapping(&nested, 0, true).unwrap();
        assert_eq!(max, 3);
        let a = mapped.field("a").unwrap();
        assert_eq!(
            a.metadata().get(COLUMN_MAPPING_PHYSICAL_NAME),
            Some(&MetadataValue::String("a".into()))
        );
        assert_eq!(
            a.metadata().get("comment"),
            Some(&MetadataValue::String("kept".into()))
        );
        // Already mapped fields keep their ids.
        let (again, max) = assign_column_mapping(&mapped, 3, false).unwrap();
        assert_eq!((max, again), (3, mapped));
    }
}
