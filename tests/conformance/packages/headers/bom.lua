return "bom", debug.getinfo(1, "l").currentline
