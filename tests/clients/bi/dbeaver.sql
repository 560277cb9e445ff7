-- DBeaver 25 (pgjdbc) connecting and opening the navigator on a schema.
SET extra_float_digits = 3;
SET application_name = 'PostgreSQL JDBC Driver';
SET application_name = 'DBeaver 25.1.5 - Main <lakegres>';
SELECT current_schema(),session_user;
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass ORDER BY nspname;
SHOW search_path;
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='lakegres';
SELECT * FROM pg_catalog.pg_settings WHERE name='standard_conforming_strings';
SELECT string_agg(word, ',') FROM pg_catalog.pg_get_keywords();
SELECT version();
SELECT * FROM pg_catalog.pg_enum WHERE 1<>1 LIMIT 1;
SELECT reltype FROM pg_catalog.pg_class WHERE 1<>1 LIMIT 1;
SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description FROM pg_catalog.pg_type t LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid WHERE t.typname IS NOT NULL AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C');
SELECT c.oid,c.*,d.description FROM pg_catalog.pg_class c LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_class'::regclass WHERE c.relnamespace=(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname='default') AND c.relkind not in ('i','I','c');
SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description FROM pg_catalog.pg_attribute a INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid) LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum) LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid) WHERE NOT a.attisdropped AND c.relkind not in ('i','I','c') AND c.relname='bi_orders' ORDER BY a.attnum;
