-- Grafana's PostgreSQL data source: table and column pickers.
SELECT quote_ident(table_name) AS table_name FROM information_schema.tables WHERE table_schema = 'default' ORDER BY table_name;
SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'bi_orders' ORDER BY ordinal_position;
SELECT current_setting('server_version_num');
