"""hosts: RoCEv2 layers, NIC agent, collective generators"""
