{{ config(materialized='incremental', incremental_strategy='append', unique_key='order_id', on_schema_change='append_new_columns') }}
select order_id, status
{%- if var('wide', false) %}, upper(status) as status_code, amount{% endif %}
from {{ ref('stg_orders') }}
{% if is_incremental() %}
where order_id > (select max(order_id) from {{ this }})
{% endif %}
