"""Attribution: who (rank, host), where (path) and when (timestamps) each line came from."""
