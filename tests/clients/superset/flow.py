"""What a Superset user does, through Superset's REST API, against a Superset
server on argv[1] and a Lakegres server on argv[2]: add the database, add a
physical dataset on a Delta table, then the data of a time-series chart
with a time range, a bar chart and a table chart, a dashboard holding them,
and the bar chart's data under a dashboard filter. Prints one JSON object:
each step's HTTP status and the rows the charts got."""

import json
import sys

import requests

superset, lakegres = sys.argv[1], sys.argv[2]
base = f"http://127.0.0.1:{superset}"
s = requests.Session()
token = s.post(f"{base}/api/v1/security/login", json={
    "username": "admin", "password": "admin", "provider": "db", "refresh": True}).json()["access_token"]
s.headers["Authorization"] = f"Bearer {token}"
out = {}

uri = f"postgresql+psycopg2://tester@127.0.0.1:{lakegres}/lakegres"
r = s.post(f"{base}/api/v1/database/test_connection/", json={"sqlalchemy_uri": uri, "database_name": "lake"})
out["test_connection"] = r.status_code
r = s.post(f"{base}/api/v1/database/", json={"sqlalchemy_uri": uri, "database_name": "lake"})
out["database"] = r.status_code
db = r.json()["id"]
r = s.get(f"{base}/api/v1/database/{db}/schemas/")
out["schemas"] = sorted(r.json()["result"])
r = s.get(f"{base}/api/v1/database/{db}/tables/?q=(schema_name:sales)")
out["tables"] = [t["value"] for t in r.json()["result"]]
r = s.get(f"{base}/api/v1/database/{db}/table_metadata/?name=orders&schema=sales")
out["table_metadata"] = r.status_code
out["columns"] = [(c["name"], c["type"]) for c in r.json().get("columns", [])]
r = s.post(f"{base}/api/v1/dataset/", json={"database": db, "schema": "sales", "table_name": "orders"})
out["dataset"] = r.status_code
dataset = r.json()["id"]
# Mark `day` as the time column, as the dataset editor does.
s.put(f"{base}/api/v1/dataset/{dataset}", json={"main_dttm_col": "day"})

SUM = {"expressionType": "SIMPLE", "column": {"column_name": "amount"}, "aggregate": "SUM",
       "label": "SUM(amount)"}


def chart_data(query):
    body = {"datasource": {"id": dataset, "type": "table"}, "force": True, "queries": [query],
            "result_format": "json", "result_type": "full"}
    r = s.post(f"{base}/api/v1/chart/data", json=body)
    result = r.json().get("result", [{}])[0] if r.ok else {}
    return r.status_code, result.get("data"), result.get("query")


time_series = {
    "columns": [{"timeGrain": "P1D", "columnType": "BASE_AXIS", "sqlExpression": "day",
                 "label": "day", "expressionType": "SQL"}],
    "metrics": [SUM],
    "filters": [{"col": "day", "op": "TEMPORAL_RANGE", "val": "2025-12-01 : 2025-12-03"}],
    "orderby": [[{"expressionType": "SQL", "sqlExpression": "day", "label": "day"}, True]],
    "row_limit": 100,
}
out["time_series"] = chart_data(time_series)
bar = {"columns": ["region"], "metrics": [SUM], "orderby": [[SUM, False]], "row_limit": 10,
       "filters": [{"col": "day", "op": "TEMPORAL_RANGE", "val": "No filter"}]}
out["bar"] = chart_data(bar)
table = {"columns": ["id", "region", "amount", "day"], "metrics": [],
         "orderby": [["id", True]], "row_limit": 10}
out["table"] = chart_data(table)

charts = []
for name, viz, params in [
    ("Daily amount", "echarts_timeseries_line", {"x_axis": "day", "time_grain_sqla": "P1D", "metrics": [SUM]}),
    ("Amount by region", "echarts_timeseries_bar", {"x_axis": "region", "metrics": [SUM], "groupby": []}),
    ("Orders", "table", {"all_columns": ["id", "region", "amount", "day"], "query_mode": "raw"}),
]:
    r = s.post(f"{base}/api/v1/chart/", json={
        "slice_name": name, "viz_type": viz, "datasource_id": dataset, "datasource_type": "table",
        "params": json.dumps({"datasource": f"{dataset}__table", "viz_type": viz, **params})})
    charts.append(r.json().get("id"))
out["charts"] = [c is not None for c in charts]
filters = [{"id": "NATIVE_FILTER-region", "name": "Region", "filterType": "filter_select",
            "targets": [{"datasetId": dataset, "column": {"name": "region"}}],
            "controlValues": {"multiSelect": True}, "defaultDataMask": {}, "cascadeParentIds": [],
            "scope": {"rootPath": ["ROOT_ID"], "excluded": []}, "type": "NATIVE_FILTER"}]
r = s.post(f"{base}/api/v1/dashboard/", json={
    "dashboard_title": "Orders", "published": True,
    "json_metadata": json.dumps({"native_filter_configuration": filters})})
out["dashboard"] = r.status_code
board = r.json().get("id")
out["dashboard_id"] = board
for chart in charts:
    s.put(f"{base}/api/v1/chart/{chart}", json={"dashboards": [board]})
r = s.get(f"{base}/api/v1/dashboard/{board}/charts")
out["dashboard_charts"] = sorted(c["slice_name"] for c in r.json().get("result", []))
# The bar chart as the dashboard shows it with the filter set to 'eu'.
out["filtered_bar"] = chart_data({**bar, "filters": bar["filters"] + [
    {"col": "region", "op": "IN", "val": ["eu"]}]})
print(json.dumps(out, default=str))
