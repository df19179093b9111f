return {name = "late"}
