{% snapshot orders_snapshot %}
{{ config(target_schema='shop', unique_key='order_id', strategy='check', check_cols=['status']) }}
select order_id, customer_id, amount, status from {{ ref('stg_orders') }}
{% endsnapshot %}
