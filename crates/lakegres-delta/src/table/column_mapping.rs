//! Data files of column-mapped tables (Delta protocol, "Column Mapping"):
//! the files our own writers make (DELETE/UPDATE rewrites, REPLACE, MERGE's
//! matched rows) name their columns by physical name, and carry the
//! column's id as the Parquet field id, as delta-rs' writes do.
//! delta-rs' own helpers for this are private to it.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{make_array, ArrayData, ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use deltalake::kernel::{DataType as DeltaType, MetadataValue, StructField, StructType};

use crate::table::features::{COLUMN_MAPPING_ID, COLUMN_MAPPING_PHYSICAL_NAME};

/// The Parquet field id key Arrow's Parquet writer reads.
const PARQUET_FIELD_ID: &str = "PARQUET:field_id";

/// The name a field has in the data files.
pub(crate) fn physical_name(field: &StructField) -> &str {
    match field.metadata().get(COLUMN_MAPPING_PHYSICAL_NAME) {
        Some(MetadataValue::String(name)) => name,
        _ => field.name(),
    }
}

/// `logical` (the table's Arrow schema) with physical names and field ids.
pub(crate) fn physical_schema(logical: &Schema, table: &StructType) -> SchemaRef {
    Arc::new(Schema::new(
        logical
            .fields()
            .iter()
            .map(|f| match table.field(f.name()) {
                Some(kernel) => physical_field(f, kernel),
                None => f.as_ref().clone(),
            })
            .collect::<Vec<_>>(),
    ))
}

fn physical_field(field: &Field, kernel: &StructField) -> Field {
    let mut metadata: HashMap<String, String> = field
        .metadata()
        .iter()
        .filter(|(k, _)| k.as_str() != PARQUET_FIELD_ID)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(MetadataValue::Number(id)) = kernel.metadata().get(COLUMN_MAPPING_ID) {
        metadata.insert(PARQUET_FIELD_ID.to_string(), id.to_string());
    }
    Field::new(
        physical_name(kernel),
        physical_type(field.data_type(), kernel.data_type()),
        field.is_nullable(),
    )
    .with_metadata(metadata)
}

fn physical_type(arrow: &DataType, kernel: &DeltaType) -> DataType {
    let element = |f: &Arc<Field>, k: &DeltaType| {
        Arc::new(
            Field::new(f.name(), physical_type(f.data_type(), k), f.is_nullable())
                .with_metadata(f.metadata().clone()),
        )
    };
    match (arrow, kernel) {
        (DataType::Struct(fields), DeltaType::Struct(s)) => DataType::Struct(
            fields
                .iter()
                .map(|f| match s.field(f.name()) {
                    Some(k) => physical_field(f, k),
                    None => f.as_ref().clone(),
                })
                .collect::<Vec<_>>()
                .into(),
        ),
        (DataType::List(f), DeltaType::Array(a)) => DataType::List(element(f, a.element_type())),
        (DataType::LargeList(f), DeltaType::Array(a)) => {
            DataType::LargeList(element(f, a.element_type()))
        }
        (DataType::Map(entries, sorted), DeltaType::Map(m)) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                let key = kv[0]
                    .as_ref()
                    .clone()
                    .with_data_type(physical_type(kv[0].data_type(), m.key_type()));
                let value = kv[1]
                    .as_ref()
                    .clone()
                    .with_data_type(physical_type(kv[1].data_type(), m.value_type()));
                DataType::Map(
                    Arc::new(
                        entries
                            .as_ref()
                            .clone()
                            .with_data_type(DataType::Struct(vec![key, value].into())),
                    ),
                    *sorted,
                )
            }
            _ => arrow.clone(),
        },
        _ => arrow.clone(),
    }
}

/// `batch` (the table's logical columns in order) under `physical`: the
/// same buffers, other names.
pub(crate) fn to_physical(
    batch: &RecordBatch,
    physical: &SchemaRef,
) -> Result<RecordBatch, ArrowError> {
    let columns = batch
        .columns()
        .iter()
        .zip(physical.fields())
        .map(|(array, field)| retype(array, field.data_type()))
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(Arc::clone(physical), columns)
}

/// `array` as `target`, a type that differs from its own only in nested
/// field names.
fn retype(array: &ArrayRef, target: &DataType) -> Result<ArrayRef, ArrowError> {
    if array.data_type() == target {
        return Ok(Arc::clone(array));
    }
    let data = array.to_data();
    let child_types: Vec<&DataType> = match target {
        DataType::Struct(fields) => fields.iter().map(|f| f.data_type()).collect(),
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => vec![f.data_type()],
        _ => vec![],
    };
    let children = data
        .child_data()
        .iter()
        .zip(child_types)
        .map(|(child, t)| retype(&make_array(child.clone()), t).map(|a| a.to_data()))
        .collect::<Result<Vec<ArrayData>, _>>()?;
    let data = data
        .into_builder()
        .data_type(target.clone())
        .child_data(children)
        .build()?;
    Ok(make_array(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int64Array, StringArray, StructArray};

    #[test]
    fn nested_names_become_physical() {
        let (table, _) = crate::table::features::assign_column_mapping(
            &StructType::try_new(vec![
                StructField::new("a", DeltaType::LONG, true),
                StructField::new(
                    "s",
                    DeltaType::Struct(Box::new(
                        StructType::try_new(vec![StructField::new("x", DeltaType::STRING, true)])
                            .unwrap(),
                    )),
                    true,
                ),
            ])
            .unwrap(),
            0,
            false,
        )
        .unwrap();
        let x = Arc::new(Field::new("x", DataType::Utf8, true));
        let s = StructArray::from(vec![(
            Arc::clone(&x),
            Arc::new(StringArray::from(vec!["v"])) as ArrayRef,
        )]);
        let logical = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("s", s.data_type().clone(), true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&logical),
            vec![Arc::new(Int64Array::from(vec![1])), Arc::new(s)],
        )
        .unwrap();
        let physical = physical_schema(&logical, &table);
        let out = to_physical(&batch, &physical).unwrap();
        let names: Vec<&String> = out.schema_ref().fields().iter().map(|f| f.name()).collect();
        assert!(names.iter().all(|n| n.starts_with("col-")), "{names:?}");
        let DataType::Struct(inner) = out.schema_ref().field(1).data_type() else {
            panic!()
        };
        assert!(inner[0].name().starts_with("col-"));
        assert_eq!(
            out.schema_ref().field(0).metadata().get(PARQUET_FIELD_ID),
            Some(&"1".to_string())
        );
    }
}
