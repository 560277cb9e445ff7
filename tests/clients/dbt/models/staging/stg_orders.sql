select
    order_id,
    customer_id,
    cast(amount as decimal(10, 2)) as amount,
    status,
    cast(ordered_at as date) as ordered_at
from {{ ref('orders') }}
