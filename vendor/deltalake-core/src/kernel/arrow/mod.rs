//! Conversions between Delta and Arrow data types
pub(crate) mod engine_ext;
pub(crate) mod extract;
