"""The spine experiment: decentralized SGD, one forget request, every registered method, one report.

Its steps `prepare`, `features`, `split` and `pretrain` also serve the other decentralized experiments
(`--exp pdudt_<dataset>`).
"""
