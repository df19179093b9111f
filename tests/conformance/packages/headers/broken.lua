#!/bin/false

error("from line 3")
