// placeholder until the cost model lands
