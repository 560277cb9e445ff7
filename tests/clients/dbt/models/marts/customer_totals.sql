select
    c.customer_id,
    c.name,
    count(o.order_id) as orders,
    coalesce(sum(o.amount), 0) as total
from {{ ref('stg_customers') }} c
left join {{ ref('stg_orders') }} o on o.customer_id = c.customer_id
group by c.customer_id, c.name
