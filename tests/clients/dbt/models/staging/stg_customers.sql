select customer_id, name, country
from {{ ref('customers') }}
