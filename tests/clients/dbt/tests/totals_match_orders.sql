-- A singular test: fails (returns rows) when the mart's total drifts from the orders.
select t.customer_id
from {{ ref('customer_totals') }} t
join (
    select customer_id, sum(amount) as total from {{ ref('stg_orders') }} group by customer_id
) o on o.customer_id = t.customer_id
where t.total <> o.total
