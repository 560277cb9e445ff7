{{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key='order_id') }}
select order_id, customer_id, amount, status, ordered_at
from {{ ref('stg_orders') }}
{% if is_incremental() %}
where ordered_at >= (select max(ordered_at) from {{ this }})
{% endif %}
