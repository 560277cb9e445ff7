{{ config(materialized='incremental', incremental_strategy='merge', unique_key='order_id') }}
select order_id, customer_id, amount, status, ordered_at
from {{ ref('stg_orders') }}
