# A small data computation of the kind an agent hands to execbox: monthly churn from a table.
import pandas as pd

customers = pd.DataFrame(
    {
        "month": ["2026-01"] * 4 + ["2026-02"] * 5 + ["2026-03"] * 4,
        "active_start": [1283, 1283, 1283, 1283, 1310, 1310, 1310, 1310, 1310, 1298, 1298, 1298, 1298],
        "churned": [12, 9, 14, 12, 8, 11, 10, 9, 13, 15, 10, 12, 11],
    }
)
by_month = customers.groupby("month").agg(start=("active_start", "first"), churned=("churned", "sum"))
by_month["churn_pct"] = (by_month["churned"] / by_month["start"] * 100).round(3)
print(by_month.to_string())
print(f"mean monthly churn: {by_month['churn_pct'].mean():.3f}%")
