//! DescribeCluster (key 60): the cluster id, the brokers on the request's
//! listener and a controller id, as Apache's `AuthHelper`
//! `.computeDescribeClusterResponse` answers a broker endpoint (no
//! authorization but for the cluster's authorized operations; v2 lists
//! brokers that are not alive as fenced when asked).

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use super::metadata::{cluster_authorized_operations, listed_brokers};
use super::{str_bytes, Err, RequestContext};

/// `EndpointType`: a broker serves BROKER endpoints.
const BROKER: i8 = 1;
const CONTROLLER: i8 = 2;

pub fn handle(ctx: &RequestContext, req: DescribeClusterRequest) -> DescribeClusterResponse {
    let v0 = ctx.api_version == 0;
    let refused = |code: Err, message: String| {
        DescribeClusterResponse::default()
            .with_error_code(if v0 {
                Err::InvalidRequest.code()
            } else {
                code.code()
            })
            .with_error_message(Some(str_bytes(message)))
    };
    match req.endpoint_type {
        BROKER => {}
        CONTROLLER => {
            return refused(
                Err::MismatchedEndpointType,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER".into(),
            )
        }
        other => {
            return refused(
                Err::UnsupportedEndpointType,
                format!("Unsupported endpoint type {other}"),
            )
        }
    }
    let (brokers, controller_id) = listed_brokers(ctx, req.include_fenced_brokers);
    DescribeClusterResponse::default()
        .with_endpoint_type(BROKER)
        .with_cluster_id(str_bytes(ctx.broker.cluster_id.clone()))
        .with_controller_id(BrokerId(controller_id))
        .with_cluster_authorized_operations(if req.include_cluster_authorized_operations {
            cluster_authorized_operations(ctx)
        } else {
            i32::MIN
        })
        .with_brokers(
            brokers
                .into_iter()
                .map(|b| {
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(b.id))
                        .with_host(str_bytes(b.host))
                        .with_port(i32::from(b.port))
                        .with_is_fenced(b.fenced)
                })
                .collect(),
        )
}
