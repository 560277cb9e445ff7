//! Arrow batches → pgwire rows, through arrow-pg (the only caller of it).
//! An error while rows stream becomes a statement error with its SQLSTATE,
//! not arrow-pg's bare XX000.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::execution::SendableRecordBatchStream;
use futures::{stream, StreamExt};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldInfo, QueryResponse};
use pgwire::api::Type;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;

use crate::sqlstate::user_error;

/// Column descriptions for a result schema in the requested formats.
pub fn fields(schema: &Schema, format: &Format) -> PgWireResult<Vec<FieldInfo>> {
    arrow_pg::datatypes::arrow_schema_to_pg_fields(schema, format, None)
}

/// The Postgres type of an Arrow type (for parameter descriptions).
pub fn pg_type(data_type: &DataType) -> Type {
    arrow_pg::datatypes::into_pg_type(data_type).unwrap_or(Type::UNKNOWN)
}

/// A streaming row response; batches are encoded as the client reads them.
pub fn query_response(
    batches: SendableRecordBatchStream,
    format: &Format,
    tag: &str,
) -> PgWireResult<QueryResponse> {
    let fields = Arc::new(fields(batches.schema().as_ref(), format)?);
    let row_fields = Arc::clone(&fields);
    let rows = batches
        .map(
            move |batch| -> Box<dyn Iterator<Item = PgWireResult<DataRow>> + Send> {
                match batch {
                    Ok(batch) => Box::new(arrow_pg::datatypes::encode_recordbatch(
                        Arc::clone(&row_fields),
                        batch,
                    )),
                    Err(e) => Box::new(std::iter::once(Err::<DataRow, PgWireError>(user_error(
                        &lakegres_sql::Error::DataFusion(e),
                    )))),
                }
            },
        )
        .flat_map(stream::iter);
    let mut response = QueryResponse::new(fields, rows);
    response.set_command_tag(tag);
    Ok(response)
}
